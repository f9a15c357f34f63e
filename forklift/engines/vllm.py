"""vLLM: log lines, knob registry location, CLI and metric names (checked against the 0.32.0 sdist)."""

from __future__ import annotations

import re

from forklift.engines.adapter import EngineAdapter, FactPattern, FatalPattern, ScanPattern


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _float(text: str) -> float:
    return float(text.replace(",", ""))


_NUM = r"-?[\d,]+(?:\.\d+)?"
# What the GPU worker's free-memory check says was asked (vllm/v1/worker/utils.py, 0.26-0.33): 0.32 added the
# second wording, for weights another process holds.
_GPU_ASKED = r"(?:desired GPU memory utilization|the engine's budget after excluding external process's weights)"

FACTS = (
    # 0.32 prints pool and concurrency on one line; 0.26 (the GPU runs) on two, so each is its own pattern.
    FactPattern(
        regex=re.compile(rf"(?P<device>\w+(?: \+ host)?) KV cache size: (?P<tokens>{_NUM}) tokens"),
        facts={"device": ("kv_pool_device", str), "tokens": ("kv_pool_tokens", _int)},
        source="vllm/v1/core/kv_cache_utils.py",
        format="%s KV cache size: %s tokens, ",
    ),
    FactPattern(
        regex=re.compile(rf"Maximum concurrency for (?P<per>{_NUM}) tokens per request: (?P<conc>{_NUM})x"),
        facts={"per": ("max_concurrency_tokens", _int), "conc": ("max_concurrency", _float)},
        source="vllm/v1/core/kv_cache_utils.py",
        format="Maximum concurrency for %s tokens per request: %.2fx",
    ),
    FactPattern(
        regex=re.compile(rf"Available KV cache memory: (?P<gib>{_NUM}) GiB"),
        facts={"gib": ("kv_memory_gib", _float)},
        source="vllm/v1/worker/gpu_worker.py",
        format="Available KV cache memory: %s GiB",
    ),
    FactPattern(
        regex=re.compile(rf"(?:Explicitly|Auto) set \((?P<gib>{_NUM})/{_NUM}\) GiB for KV cache on node"),
        facts={"gib": ("kv_memory_gib", _float)},
        source="vllm/v1/worker/cpu_worker.py",
        format="Explicitly set ({}/{}) GiB for KV cache on node {}.",
    ),
    FactPattern(
        regex=re.compile(rf"Model loading took (?P<gib>{_NUM}) GiB (?:memory )?and (?P<s>{_NUM}) seconds"),
        facts={"gib": ("model_load_gib", _float), "s": ("model_load_s", _float)},
        source="vllm/v1/worker/gpu_model_runner.py",
        format="Model loading took %s GiB memory and %.6f seconds",
    ),
    FactPattern(
        regex=re.compile(rf"Graph capturing finished in (?P<s>{_NUM}) secs, took (?P<gib>{_NUM}) GiB"),
        facts={"s": ("graph_capture_s", _float), "gib": ("graph_capture_gib", _float)},
        source="vllm/v1/worker/gpu_model_runner.py",
        format="Graph capturing finished in %.0f secs, took %.2f GiB",
    ),
    FactPattern(
        regex=re.compile(
            rf"CUDA graph pool memory: (?P<actual>{_NUM}) GiB \(actual\), (?P<est>{_NUM}) GiB \(estimated\)"
        ),
        facts={"actual": ("graph_pool_gib", _float), "est": ("graph_pool_estimate_gib", _float)},
        source="vllm/v1/worker/gpu_worker.py",
        format="CUDA graph pool memory: %s GiB (actual), %s GiB (estimated), ",
    ),
    FactPattern(
        # The GPU worker's memory summary (0.26 and 0.32 word its middle differently; these parts agree).
        regex=re.compile(
            rf"Free memory on device \((?P<free>{_NUM})/(?P<total>{_NUM}) GiB\) on startup\. "
            rf"Desired GPU memory utilization is \((?P<util>{_NUM}), (?P<want>{_NUM}) GiB\)"
        ),
        facts={
            "free": ("gpu_free_gib", _float),
            "total": ("gpu_total_gib", _float),
            "util": ("gpu_memory_utilization", _float),
            "want": ("gpu_requested_gib", _float),
        },
        source="vllm/v1/worker/gpu_worker.py",
        format="Free memory on device ({}/{} GiB) on startup. Desired GPU memory utilization is ({}, {} GiB). ",
    ),
    FactPattern(
        regex=re.compile(rf"and (?P<gib>{_NUM}) GiB for CUDAGraph memory\."),
        facts={"gib": ("graph_pool_gib", _float)},
        source="vllm/v1/worker/gpu_worker.py",
        format="and {} GiB for CUDAGraph memory. ",
    ),
    FactPattern(
        regex=re.compile(rf"Estimated CUDA graph memory: (?P<gib>{_NUM}) GiB total"),
        facts={"gib": ("graph_pool_estimate_gib", _float)},
        source="vllm/v1/worker/gpu_model_runner.py",
        format="Estimated CUDA graph memory: %.2f GiB total",
    ),
    FactPattern(
        regex=re.compile(rf"torch\.compile took (?P<s>{_NUM}) s in total"),
        facts={"s": ("compile_s", _float)},
        source="vllm/compilation/monitor.py",
        format="%storch.compile took %.2f s in total",
    ),
    FactPattern(
        regex=re.compile(rf"init engine \(profile, create kv cache, warmup model\) took (?P<s>{_NUM}) s"),
        facts={"s": ("engine_init_s", _float)},
        source="vllm/v1/engine/core.py",
        format="init engine (profile, create kv cache, warmup model) took %.2f s",
    ),
    FactPattern(
        regex=re.compile(r"Starting vLLM server on (?P<url>\S+)"),
        facts={"url": ("listening", str)},
        source="vllm/entrypoints/launchers/api_server/entry.py",
        format="Starting vLLM server on %s",
    ),
    FactPattern(
        # The CPU worker refusing to boot on memory: what there was, and what was asked.
        regex=re.compile(
            rf"Available memory on node \d+ \((?P<avail>{_NUM})/{_NUM} GiB\) on (?:startup|kv cache allocation) "
            rf"is less than (?:desired CPU memory utilization \({_NUM}, (?P<util>{_NUM}) GiB\)"
            rf"|requested memory for kv \((?P<kv>{_NUM})(?:/{_NUM})? GiB\))"
        ),
        facts={
            "avail": ("memory_available_gib", _float),
            "util": ("memory_needed_gib", _float),
            "kv": ("memory_needed_gib", _float),
        },
        source="vllm/v1/worker/cpu_worker.py",
        format="Available memory on node {} ({}/{} GiB) on kv cache allocation is less than requested memory for kv ({} GiB). ",
    ),
    FactPattern(
        # The GPU worker refusing to boot: less free memory than gpu_memory_utilization asks. 0.26-0.33 name
        # the device ("cuda:0"); older releases, whose check sat in gpu_worker.py, name none.
        regex=re.compile(
            rf"Free memory on device (?:\S+ )?\((?P<free>{_NUM})/{_NUM} GiB\) on startup is less than {_GPU_ASKED} "
            rf"\({_NUM}, (?P<want>{_NUM}) GiB\)"
        ),
        facts={"free": ("memory_available_gib", _float), "want": ("memory_needed_gib", _float)},
        source="vllm/v1/worker/utils.py",
        format="Free memory on device {} ({}/{} GiB) on startup is less than desired GPU memory utilization ({}, {} GiB). ",
    ),
)

# A boot refused for memory, in the words of the CPU and GPU workers' checks (cpu_worker.py, worker/utils.py;
# 0.32 also refuses when weights held outside the engine alone exceed the budget).
_MEMORY_REFUSAL = (
    rf"is less than (?:desired CPU memory utilization|requested memory for kv|{_GPU_ASKED})"
    r"|GiB\) exceed the desired GPU memory utilization"
)

FATALS = (
    FatalPattern(re.compile(r"CUDA out of memory|OutOfMemoryError|out of memory", re.I), rank=0),
    FatalPattern(
        re.compile(r"No available memory for the cache blocks"),
        rank=0,
        source="vllm/v1/core/kv_cache_utils.py",
        format="No available memory for the cache blocks. ",
    ),
    FatalPattern(re.compile(_MEMORY_REFUSAL), rank=0),
    FatalPattern(re.compile(r"NCCL error|ncclSystemError|ncclInternalError|ncclUnhandledCudaError"), rank=0),
    # A rank that stopped answering: torch's NCCL watchdog, and vLLM's executor waiting on a worker.
    FatalPattern(re.compile(r"Watchdog caught collective operation timeout|NCCL communicator was aborted"), rank=0),
    FatalPattern(
        re.compile(r"RPC call to \S+ timed out"),
        rank=0,
        source="vllm/v1/executor/multiproc_executor.py",
        format="RPC call to {} timed out.",
    ),
    FatalPattern(re.compile(r"EngineDeadError"), rank=1),
    # The exception line that closes a traceback: its message is usually the cause.
    FatalPattern(re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception): \S"), rank=2),
    FatalPattern(
        re.compile(r"EngineCore failed to start"),
        rank=3,
        source="vllm/v1/engine/core.py",
        format="EngineCore failed to start.",
    ),
    FatalPattern(re.compile(r"^Traceback \(most recent call last\)"), rank=4),
)

# `canary logscan`: lines a healthy server never prints. Grammar rejections are the
# structured-output backends' error lines (vllm/v1/structured_output/backend_xgrammar.py,
# vllm/v1/core/sched/scheduler.py); server errors are uvicorn's access-log lines.
SCAN = (
    ScanPattern("traceback", re.compile(r"Traceback \(most recent call last\)")),
    ScanPattern(
        "engine_dead", re.compile(r"EngineDeadError|EngineCore failed to start|Engine core initialization failed")
    ),
    ScanPattern("rpc_timeout", re.compile(r"RPC call to \S+ timed out")),
    ScanPattern("nccl_error", re.compile(r"NCCL error|ncclSystemError|ncclInternalError|ncclUnhandledCudaError")),
    ScanPattern("illegal_memory_access", re.compile(r"illegal memory access", re.IGNORECASE)),
    ScanPattern(
        "out_of_memory",
        re.compile(
            rf"out of memory|OutOfMemoryError|No available memory for the cache blocks|{_MEMORY_REFUSAL}",
            re.IGNORECASE,
        ),
    ),
    ScanPattern(
        "grammar_rejection",
        re.compile(r"Failed to advance FSM|grammar rejected tokens|grammar terminated or rejected draft token"),
    ),
    ScanPattern("http_5xx", re.compile(r'"(?:GET|POST) \S+ HTTP/[\d.]+" 5\d\d\b')),
)

VLLM = EngineAdapter(
    name="vllm",
    package="vllm",
    env_prefix="VLLM_",
    registry_file="vllm/envs.py",
    registry_dict="environment_variables",
    serve_module="vllm.entrypoints.cli.main",
    serve_script="vllm",
    serving_image="vllm/vllm-openai:v{version}",
    health_path="/health",
    fact_patterns=FACTS,
    fatal_patterns=FATALS,
    unknown_env_regex=re.compile(r"Unknown vLLM environment variable detected: (?P<name>\w+)"),
    dying_regex=re.compile(r"EngineCore failed to start|Engine core initialization failed|EngineDeadError"),
    # "(EngineCore pid=8241) INFO 11-30 09:12:57 [core.py:402] " and bare "[W1130 ...] " torch lines.
    log_prefix=re.compile(
        r"^(?:\(\w[\w-]* pid=\d+\) )?(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d [\d:]+ \[[^\]]+\] )?"
    ),
    # vllm/logger.py: "(%(vllm_process_name)s pid=%(process)d) ..."; names: APIServer, EngineCore,
    # EngineCore_DP<r>, Worker (before the parallel groups exist), Worker[_DP<r>][_PP<r>][_TP<r>]...
    process_tag=re.compile(r"^\((?P<tag>\w[\w-]*) pid=(?P<pid>\d+)\)"),
    # vllm/distributed/parallel_state.py (0.26 and 0.32 alike up to the TP rank)
    rank_line=re.compile(
        r"rank (?P<rank>\d+) in world size (?P<world>\d+) is assigned as "
        r"DP rank (?P<dp>\d+), PP rank (?P<pp>\d+), (?:PCP rank \d+, )?TP rank (?P<tp>\d+)"
    ),
    metrics={
        "spec_drafts": "vllm:spec_decode_num_drafts",
        "spec_draft_tokens": "vllm:spec_decode_num_draft_tokens",
        "spec_accepted_tokens": "vllm:spec_decode_num_accepted_tokens",
        "spec_accepted_per_pos": "vllm:spec_decode_num_accepted_tokens_per_pos",
        "prefix_cache_queries": "vllm:prefix_cache_queries",
        "prefix_cache_hits": "vllm:prefix_cache_hits",
        "preemptions": "vllm:num_preemptions",
        "generation_tokens": "vllm:generation_tokens",
        "prompt_tokens": "vllm:prompt_tokens",
        "cache_config": "vllm:cache_config_info",  # an info gauge: its labels carry kv_cache_size_tokens
        # latency histograms (the same names in 0.26.0 and 0.32.0, v1/metrics/loggers.py)
        "ttft_histogram": "vllm:time_to_first_token_seconds",
        "tpot_histogram": "vllm:request_time_per_output_token_seconds",
        "itl_histogram": "vllm:inter_token_latency_seconds",
        "e2e_histogram": "vllm:e2e_request_latency_seconds",
        # the engine core's share of a TTFT: waiting to be scheduled, then scheduled until its first token
        "queue_histogram": "vllm:request_queue_time_seconds",
        "prefill_histogram": "vllm:request_prefill_time_seconds",
    },
    # vllm/envs.py VLLM_CACHE_ROOT holds torch_compile_cache; inductor and triton keep their own.
    # FlashInfer keeps its JIT kernels under $FLASHINFER_WORKSPACE_BASE/.cache/flashinfer (default: home);
    # the CUDA driver its PTX-compiled kernels in $CUDA_CACHE_PATH (default ~/.nv/ComputeCache).
    cache_env=(
        "VLLM_CACHE_ROOT",
        "TORCHINDUCTOR_CACHE_DIR",
        "TRITON_CACHE_DIR",
        "FLASHINFER_WORKSPACE_BASE",
        "CUDA_CACHE_PATH",
    ),
    # NVLink multicast (NVLS) kept off on every launch: on the shared multi-GPU hosts it is not usable
    # (the GPU kit and the device notes say so) and NCCL, torch symmetric memory and NVSHMEM each try it.
    forced_env={"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"},
    parallel_flags=("--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size"),
    # Legacy variables that overlap a CLI flag: when both are set, one silently beats the
    # other (the 0.29 retention-interval bug). vLLM keeps no machine-readable list; each
    # entry names the source line that proves the overlap.
    deprecated_env={
        # vllm/platforms/cpu.py: "# Legacy setting" -> cache_config.kv_cache_memory_bytes
        "VLLM_CPU_KVCACHE_SPACE": "--kv-cache-memory-bytes",
    },
    scan_patterns=SCAN,
    requirement_files=("requirements/cuda.txt",),  # -r common.txt: what the CUDA build's metadata lists
    kernel_caches={
        "torch": "torch.compile and CUDA-graph caches (VLLM_CACHE_ROOT, TORCHINDUCTOR_CACHE_DIR) rebuilt",
        "triton": "Triton's kernel cache (TRITON_CACHE_DIR) rebuilt",
        "flashinfer-python": "every cached FlashInfer JIT kernel (FLASHINFER_WORKSPACE_BASE) rebuilt",
        "flashinfer-cubin": "FlashInfer's prebuilt kernels replaced",
        "flashinfer-jit-cache": "FlashInfer's prebuilt JIT cache replaced",
        "xgrammar": "xgrammar's compiled grammar kernels rebuilt",
        "tilelang": "TileLang's kernel cache rebuilt",
        "nvidia-cutlass-dsl": "CuTe DSL kernels (FlashAttention 4) recompiled",
    },
    # A clean SIGTERM stop logs a Traceback ending in EngineDeadError (vllm/v1/engine/async_llm.py) after this.
    scan_until=re.compile(r"\[shutdown\] (?:EngineCore: trigger received signal|API server: shutdown triggered)"),
)
