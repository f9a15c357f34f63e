"""The real vLLM CPU build booted through forklift.launch: facts read from its log, served requests."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.cli import FORKLIFT
from tests.fixtures.engine import (
    SESSION_MEMORY_MAX,
    STREAMING_SHAPE,
    distribution_toml,
    free_port,
    tiny_profile_toml,
)

pytestmark = pytest.mark.engine


def test_server_boots_and_reports_its_kv_pool(vllm_server):
    facts = vllm_server.boot.facts
    assert vllm_server.boot.outcome == "ready"
    assert facts.kv_pool_device == "CPU"
    # 1 GiB of bf16 K and V for the streaming test model's layers x heads of 64 dims:
    # 1 GiB / (2 * layers * heads * 64 * 2 bytes) tokens (65,536 for hidden 512, 8 layers, 8 heads).
    layers, heads = STREAMING_SHAPE["layers"], STREAMING_SHAPE["hidden"] // 64
    assert facts.kv_pool_tokens == 1024**3 // (2 * layers * heads * 64 * 2)
    assert facts.kv_memory_gib == 1.0
    assert facts.max_concurrency_tokens == 2048
    assert facts.max_concurrency == pytest.approx(facts.kv_pool_tokens / 2048, rel=1e-3)
    assert facts.engine_init_s is not None and facts.engine_init_s > 0
    assert facts.listening == vllm_server.url
    assert facts.fatal is None
    assert facts.unknown_env == []


def test_the_engine_runs_inside_its_memory_cgroup_and_the_kernel_reads_its_peak(vllm_server):
    memory = vllm_server.boot.memory
    assert memory is not None and memory.max_bytes == SESSION_MEMORY_MAX
    assert memory.oom_kills == 0 and memory.incidents() == {}
    # The KV pool alone is 1 GiB (VLLM_CPU_KVCACHE_SPACE=1), allocated during boot inside the group.
    assert memory.peak_bytes is not None and 1 << 30 < memory.peak_bytes < SESSION_MEMORY_MAX
    assert vllm_server.server.pid in [int(pid) for pid in (Path(memory.cgroup) / "cgroup.procs").read_text().split()]


def test_an_engine_over_its_memory_max_is_killed_by_the_kernel_and_said_so(engine_python, tiny_model, tmp_path):
    # 1 GiB of KV cache cannot fit under 900 MiB: the kernel's OOM killer stops the boot, not a timeout.
    (tmp_path / "forklift.toml").write_text(
        distribution_toml(tiny_profile_toml(engine_python, tiny_model, free_port()))
        + 'memory = { max = "900MiB", swap_max = 0 }\n'
    )
    result = subprocess.run(
        [*FORKLIFT, "-c", str(tmp_path), "launch", "tiny"],
        env={**os.environ, "FORKLIFT_STATE_DIR": str(tmp_path / "state")},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: engine killed during boot by its memory cgroup's OOM killer"), last
    (path,) = (tmp_path / "receipts").glob("*-boot-*.json")
    memory = json.loads(path.read_text())["body"]["memory"]
    assert memory["oom_kills"] >= 1 and memory["max_bytes"] == 900 << 20
    assert not Path(memory["cgroup"]).exists()


def test_patched_boot_fact_of_the_example_series_is_in_the_log(vllm_server):
    # examples/vllm's 0003 patch logs "forklift boot fact: kv_cache_blocks=N block_size=B".
    extra = vllm_server.boot.facts.extra
    assert set(extra) == {"kv_cache_blocks", "block_size"}
    assert int(extra["kv_cache_blocks"]) * int(extra["block_size"]) == vllm_server.boot.facts.kv_pool_tokens
    assert "forklift boot fact: kv_cache_blocks=" in vllm_server.log_path.read_text()


def test_server_answers_a_chat_request(vllm_server):
    response = httpx.post(
        vllm_server.url + "/v1/chat/completions",
        json={"model": vllm_server.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4},
        timeout=60,
    )
    assert response.status_code == 200
    assert response.json()["usage"]["completion_tokens"] == 4


def test_boot_receipt_records_the_exact_argv(vllm_server):
    receipt = json.loads(vllm_server.receipt_path.read_text())
    assert receipt["kind"] == "boot" and receipt["status"] == "ok"
    assert receipt["body"]["outcome"] == "ready"
    assert receipt["profile"]["argv"][-1] == "--enforce-eager"
    assert receipt["profile"]["env"]["VLLM_CPU_KVCACHE_SPACE"] == "1"


def test_ngram_server_runs_speculative_decoding(vllm_server_ngram):
    # The TOML-style table became a JSON flag value the engine parsed into its config.
    assert "SpeculativeConfig(method='ngram'" in vllm_server_ngram.log_path.read_text()
    assert vllm_server_ngram.boot.outcome == "ready"
