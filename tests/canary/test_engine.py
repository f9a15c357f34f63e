"""`forklift canary` against the real vLLM CPU server and the tiny random-weight model.

Which results are real positives and which real negatives:
- tools/json: the const schema forces the exact arguments even from random weights: 20/20 is a
  real positive; a label the model cannot finish within max_tokens is a real negative.
- needle: the random model cannot retrieve anything: FAIL with the answer it gave is a real
  negative; with --force-choice the grammar forces the answer: a positive control of the pipeline
  (prompt, coldness from /metrics, exact match), not of the model.
- logscan: the deliberately broken huge-KV boot (session fixture huge_kv_boot) is found; the
  healthy session server's log is clean.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli import forklift

pytestmark = pytest.mark.engine


def canary(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    folder = tmp_path / "receipts"
    result = forklift("canary", *args, "--receipts", folder, env={"FORKLIFT_STATE_DIR": str(tmp_path / "state")})
    receipts = [json.loads(p.read_text()) for p in sorted(folder.glob("*-canary-*.json"))]
    return result, sorted(receipts, key=lambda r: r["created"])


def test_forced_tool_calls_and_json_schema_are_exact_twenty_times(vllm_server, tmp_path):
    result, (tools, js) = canary(
        tmp_path, "--url", vllm_server.url, "--suite", "tools,json", "--log", str(vllm_server.log_path)
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert tools["status"] == "ok" and tools["kind"] == "canary"
    summary = tools["body"]["summary"]
    assert summary["exact"] == 20 and summary["http_status"] == {"200": 20}
    assert summary["finish_reason"] == {"stop": 20} and summary["grammar_rejections"] == 0
    call = tools["body"]["items"][0]["detail"]["calls"][0]
    assert call["name"] == "report_result" and json.loads(call["arguments"]) == {"ok": True, "label": "SPEC_OK"}
    assert js["body"]["summary"]["exact"] == 20
    assert json.loads(js["body"]["items"][0]["detail"]["content"]) == {"ok": True, "label": "SPEC_OK"}


def test_a_schema_the_model_cannot_finish_in_max_tokens_fails(vllm_server, tmp_path):
    long_label = "L" * 200
    result, (tools,) = canary(
        tmp_path, "--url", vllm_server.url, "--suite", "tools", "--repeats", "2", "--max-tokens", "8",
        "--label", long_label,
    )  # fmt: skip
    assert result.returncode == 1
    assert "canary: 1 of 1 suites failed: tools" in result.stderr
    assert tools["status"] == "failed" and tools["body"]["summary"]["exact"] == 0
    assert tools["body"]["summary"]["finish_reason"] == {"length": 2}
    assert tools["body"]["failure"].startswith("0/2 exact; request 0: expected one call report_result(")


def test_needle_random_model_fails_with_its_answer_and_the_forced_choice_passes_cold(vllm_server, tmp_path):
    common = ["--url", vllm_server.url, "--suite", "needle", "--context-tokens", "1200", "--depth", "0.3"]
    negative, (miss,) = canary(tmp_path / "negative", *common)
    assert negative.returncode == 1  # real negative: random weights retrieve nothing
    answer = miss["body"]["items"][0]["detail"]["answer"]
    assert miss["body"]["failure"] == f"depth 0.3: answered {answer[:80]!r}, expected 'blue-harbor-7391'"
    assert miss["body"]["summary"]["prefix_cache_hits"] == 0
    assert 1000 < miss["body"]["summary"]["prompt_tokens"] < 2048
    positive, (hit,) = canary(tmp_path / "positive", *common, "--force-choice")  # grammar-forced: a positive control
    assert positive.returncode == 0, positive.stdout
    assert hit["body"]["items"][0]["detail"]["answer"] == "blue-harbor-7391"
    assert hit["body"]["summary"]["prefix_cache_hits"] == 0  # a fresh salt: cold although the filler was just sent


def test_cold_pair_hits_only_the_second_time_and_soak_counts_every_token(vllm_server, tmp_path):
    result, (pair, soak) = canary(
        tmp_path, "--url", vllm_server.url, "--suite", "cold-pair,soak", "--context-tokens", "1200",
        "--requests", "10", "--soak-tokens", "8",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout
    cold, cached = pair["body"]["items"]
    assert cold["detail"]["prefix_cache_hits"] == 0 and cached["detail"]["prefix_cache_hits"] > 0
    assert pair["body"]["summary"]["cold_s"] > 0 and pair["body"]["summary"]["cached_s"] > 0
    assert soak["body"]["summary"]["passed"] == 10 and soak["body"]["summary"]["completion_tokens"] == 80


def test_logscan_finds_the_broken_boot_and_passes_the_healthy_server(huge_kv_boot, vllm_server, tmp_path):
    dist, _ = huge_kv_boot
    (boot,) = (dist / "receipts").glob("*-boot-*.json")
    log = json.loads(boot.read_text())["body"]["log_path"]
    broken, (scan,) = canary(tmp_path / "broken", "--url", vllm_server.url, "--suite", "logscan", "--log", log)
    assert broken.returncode == 1
    counts = scan["body"]["summary"]
    assert counts["out_of_memory"] >= 1 and counts["traceback"] >= 1 and counts["engine_dead"] >= 1
    first = next(i for i in scan["body"]["items"] if i["id"] == "out_of_memory")["first"]
    assert "is less than requested memory for kv (1000.0 GiB)" in first["text"]
    assert "out_of_memory x" in scan["body"]["failure"]
    healthy, (clean,) = canary(
        tmp_path / "healthy", "--url", vllm_server.url, "--suite", "logscan", "--log", str(vllm_server.log_path)
    )
    assert healthy.returncode == 0, clean["body"]["failure"]
    assert set(clean["body"]["summary"].values()) == {0}
