"""Boot facts from real H200 logs: vLLM 0.26.0 on the kit's random 1B Llama (docs/gpu-report, 2026-12-01).

The fixtures are the lines of the two captured engine logs that carry facts (docs/gpu-report/ has the
receipts of the same boots). They showed what format-string tests on 0.32.0 and CPU logs could not:
0.26.0 prints the KV pool and the maximum concurrency on two lines, the V2 model runner says
"Model loading took X GiB and" (no "memory"), and the GPU worker's memory summary (free/total GiB,
utilization, CUDA graph memory) is only in the long "Free memory on device" line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from forklift.engines.vllm import VLLM
from forklift.launch.bootlog import parse_boot_log

DATA = Path(__file__).with_name("data")

CUDA_GRAPHS = {
    "kv_pool_device": "GPU",
    "kv_pool_tokens": 4_125_376,
    "max_concurrency_tokens": 4096,
    "max_concurrency": 1007.17,
    "kv_memory_gib": 125.9,
    "model_load_gib": 1.94,
    "model_load_s": 2.297456,
    "compile_s": 13.71,
    "graph_capture_s": 2.0,
    "graph_capture_gib": 0.45,
    "graph_pool_gib": 0.45,
    "gpu_free_gib": 139.29,
    "gpu_total_gib": 139.8,
    "gpu_memory_utilization": 0.92,
    "gpu_requested_gib": 128.62,
    "engine_init_s": 33.73,
    "listening": "http://127.0.0.1:8000",
    "fatal": None,
}
# --enforce-eager: no torch.compile, no graphs, so a slightly larger pool from the same 0.92 of the GPU.
EAGER = {
    **CUDA_GRAPHS,
    "kv_pool_tokens": 4_127_296,
    "max_concurrency": 1007.64,
    "kv_memory_gib": 125.96,
    "model_load_s": 1.848968,
    "compile_s": None,
    "graph_capture_s": None,
    "graph_capture_gib": None,
    "graph_pool_gib": 0.0,
    "engine_init_s": 19.43,
}


@pytest.mark.parametrize(
    ("log", "want", "blocks"),
    [("h200-vllm-0.26.0-cuda-graphs.log", CUDA_GRAPHS, "257836"), ("h200-vllm-0.26.0-eager.log", EAGER, "257956")],
)
def test_real_h200_boot_log_gives_every_gpu_fact(log, want, blocks):
    facts = parse_boot_log((DATA / log).read_text(encoding="utf-8").splitlines(), VLLM)
    got = facts.model_dump()
    assert {key: got[key] for key in want} == want
    # the series' own boot fact (patch 0002, re-cut for 0.26.0) ran on the GPU
    assert facts.extra == {"kv_cache_blocks": blocks, "block_size": "16"}


def test_pool_tokens_agree_with_blocks_times_block_size():
    """The KV pool the engine reports is its block count times the block size: two log lines, one fact."""
    for log in DATA.glob("h200-*.log"):
        facts = parse_boot_log(log.read_text(encoding="utf-8").splitlines(), VLLM)
        assert facts.kv_pool_tokens == int(facts.extra["kv_cache_blocks"]) * int(facts.extra["block_size"])
