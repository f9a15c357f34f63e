"""Boot-fact patterns checked against the format strings in the real vLLM 0.32.0 sdist.

Each pattern names the source file and the exact format string that prints its
line; this test finds that string in the pinned release's source, renders it
with sample values and parses the rendered line. A release that rewords a log
line fails here, not in a benchmark.
"""

from __future__ import annotations

import ast

import pytest

from forklift.engines.vllm import VLLM
from forklift.launch.bootlog import parse_boot_log

pytestmark = pytest.mark.network

# format string -> (sample args, facts the rendered line must give)
SAMPLES = {
    "%s KV cache size: %s tokens, ": (("GPU", "1,048,576"), {"kv_pool_device": "GPU", "kv_pool_tokens": 1048576}),
    "Maximum concurrency for %s tokens per request: %.2fx": (
        ("32,768", 32.0),
        {"max_concurrency_tokens": 32768, "max_concurrency": 32.0},
    ),
    "CUDA graph pool memory: %s GiB (actual), %s GiB (estimated), ": (
        ("0.41", "0.52"),
        {"graph_pool_gib": 0.41, "graph_pool_estimate_gib": 0.52},
    ),
    "Estimated CUDA graph memory: %.2f GiB total": ((0.52,), {"graph_pool_estimate_gib": 0.52}),
    "Free memory on device ({}/{} GiB) on startup. Desired GPU memory utilization is ({}, {} GiB). ": (
        ("139.29", "139.8", 0.92, "128.62"),
        {"gpu_free_gib": 139.29, "gpu_total_gib": 139.8, "gpu_memory_utilization": 0.92, "gpu_requested_gib": 128.62},
    ),
    "and {} GiB for CUDAGraph memory. ": (("0.45",), {"graph_pool_gib": 0.45}),
    "Available KV cache memory: %s GiB": (("13.5",), {"kv_memory_gib": 13.5}),
    "Explicitly set ({}/{}) GiB for KV cache on node {}.": (("1.0", "11.34", 0), {"kv_memory_gib": 1.0}),
    "Model loading took %s GiB memory and %.6f seconds": (
        ("15.26", 12.345678),
        {"model_load_gib": 15.26, "model_load_s": 12.345678},
    ),
    "Graph capturing finished in %.0f secs, took %.2f GiB": (
        (7.0, 0.58),
        {"graph_capture_s": 7.0, "graph_capture_gib": 0.58},
    ),
    "%storch.compile took %.2f s in total": (("[language_model] ", 31.42), {"compile_s": 31.42}),
    "init engine (profile, create kv cache, warmup model) took %.2f s": ((2.49,), {"engine_init_s": 2.49}),
    "Starting vLLM server on %s": (("http://127.0.0.1:8015",), {"listening": "http://127.0.0.1:8015"}),
    "Available memory on node {} ({}/{} GiB) on kv cache allocation is less than requested memory for kv ({} GiB). ": (
        (0, "10.2", "11.34", "1000.0"),
        {"memory_available_gib": 10.2, "memory_needed_gib": 1000.0},
    ),
    "Free memory on device {} ({}/{} GiB) on startup is less than desired GPU memory utilization ({}, {} GiB). ": (
        ("cuda:0", "139.29", "139.8", 0.999, "139.66"),
        {"memory_available_gib": 139.29, "memory_needed_gib": 139.66},
    ),
}


def source_strings(path) -> set[str]:
    """Every string literal of a file; f-strings rendered with {} for each placeholder."""
    found = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)
        elif isinstance(node, ast.JoinedStr):
            found.add("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values))
    return found


def render(fmt: str, args: tuple) -> str:
    return fmt.format(*args) if "{}" in fmt else fmt % args


@pytest.mark.parametrize("pattern", VLLM.fact_patterns, ids=lambda p: p.format[:40])
def test_fact_pattern_matches_the_line_the_pinned_source_prints(pattern, vllm_032_tree):
    strings = source_strings(vllm_032_tree.path / pattern.source)
    assert any(pattern.format in s for s in strings), f"{pattern.source} no longer prints {pattern.format!r}"
    args, want = SAMPLES[pattern.format]
    line = f"(EngineCore pid=1) INFO 11-30 09:12:57 [x.py:1] {render(pattern.format, args)}"
    facts = parse_boot_log([line], VLLM).model_dump()
    assert {k: facts[k] for k in want} == want


@pytest.mark.parametrize("pattern", [p for p in VLLM.fatal_patterns if p.source], ids=lambda p: p.format)
def test_fatal_pattern_matches_the_pinned_source(pattern, vllm_032_tree):
    strings = source_strings(vllm_032_tree.path / pattern.source)
    line = next((s for s in strings if pattern.format in s), None)
    assert line is not None, f"{pattern.source} no longer prints {pattern.format!r}"
    assert parse_boot_log([line], VLLM).fatal == line.strip()[:400]


def test_unknown_variable_warning_matches_the_pinned_source(vllm_032_tree):
    strings = source_strings(vllm_032_tree.path / "vllm/platforms/interface.py")
    assert "Unknown vLLM environment variable detected: %s" in strings
    line = "(APIServer pid=8) WARNING 11-30 09:12:34 [interface.py:1457] Unknown vLLM environment variable detected: VLLM_FOO"
    assert parse_boot_log([line, line], VLLM).unknown_env == ["VLLM_FOO"]


def test_the_root_cause_beats_the_generic_failure_lines():
    log = [
        "(EngineCore pid=9) ERROR 11-30 09:13:01 [core.py:1510] EngineCore failed to start.",
        "(EngineCore pid=9) ERROR 11-30 09:13:01 [core.py:1510] Traceback (most recent call last):",
        "(EngineCore pid=9) ERROR 11-30 09:13:01 [core.py:1510] ValueError: Available memory on node 0 (10.20/11.34 GiB)"
        " on kv cache allocation is less than requested memory for kv (1000.00 GiB). Decrease --kv-cache-memory-bytes",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ]
    facts = parse_boot_log(log, VLLM)
    assert facts.fatal.startswith("ValueError: Available memory on node 0")
    assert facts.memory_needed_gib == 1000.0 and facts.memory_available_gib == 10.2


def test_series_boot_facts_are_generic_key_values():
    line = (
        "(EngineCore pid=3) INFO 11-30 09:23:34 [core.py:407] forklift boot fact: kv_cache_blocks=8192 block_size=128"
    )
    facts = parse_boot_log([line, "forklift boot fact: patch.series=example"], VLLM)
    assert facts.extra == {"kv_cache_blocks": "8192", "block_size": "128", "patch.series": "example"}


def test_metric_names_exist_in_the_pinned_source(vllm_032_tree):
    files = ["vllm/v1/metrics/loggers.py", "vllm/v1/spec_decode/metrics.py"]
    strings = set().union(*(source_strings(vllm_032_tree.path / f) for f in files))
    missing = [name for name in VLLM.metrics.values() if name not in strings]
    assert missing == []
