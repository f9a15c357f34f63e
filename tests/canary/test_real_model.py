"""`forklift canary` against the real vLLM CPU server on a real instruct model (SmolLM2-135M-Instruct, bf16).

Unlike the tiny random model, this one retrieves: the needle passes without --force-choice, exactly, with
every request cold. The model's window is 8,192 tokens; prefill there runs ~100-200 tokens/s on a loaded
2-core box, so the long case asks two depths (~1 minute each), the short one three. Seen at 7,810 tokens:
depths 0.5 and 0.9 exact, depth 0.1 answered garbage (a real negative the test leaves out).
Which results are real positives: every one here (the model's own answers, no grammar forcing a needle).
The tools/json suites' const schema forces their arguments whatever the weights; on a real model they show
the grammar path holds for real text too (20/20 exact, finish_reason stop).
"""

from __future__ import annotations

import json

import pytest

from tests.canary.test_engine import canary

pytestmark = pytest.mark.engine

WINDOW = 8192  # the model's max_position_embeddings (config.json)


@pytest.mark.parametrize(("tokens", "depths"), [(1500, ("0.1", "0.5", "0.9")), (7600, ("0.5", "0.9"))])
def test_needle_is_returned_exactly_and_cold_at_each_depth_without_force_choice(real_server, tmp_path, tokens, depths):
    args = ["--url", real_server.url, "--suite", "needle", "--context-tokens", str(tokens)]
    result, (needle,) = canary(tmp_path, *args, *(arg for depth in depths for arg in ("--depth", depth)))
    assert result.returncode == 0, needle["body"]["failure"]
    items = needle["body"]["items"]
    assert [item["detail"]["depth"] for item in items] == [float(depth) for depth in depths]
    assert all(item["detail"]["answer"] == "blue-harbor-7391" for item in items)
    assert all(item["finish_reason"] == "stop" for item in items)  # the closing quote ended each answer
    assert all(item["detail"]["prefix_cache_hits"] == 0 for item in items)  # each salted afresh: cold
    assert len({item["detail"]["salt"] for item in items}) == len(items)
    assert tokens * 0.9 < needle["body"]["summary"]["prompt_tokens"] < WINDOW
    assert needle["body"]["options"]["force_choice"] is False


def test_tools_json_cold_pair_and_soak_hold_on_the_real_model(real_server, tmp_path):
    result, (tools, js, pair, soak) = canary(
        tmp_path, "--url", real_server.url, "--suite", "tools,json,cold-pair,soak", "--log", str(real_server.log_path),
        "--context-tokens", "1200", "--requests", "10", "--soak-tokens", "8",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    for suite in (tools, js):
        summary = suite["body"]["summary"]
        assert summary["exact"] == 20 and summary["finish_reason"] == {"stop": 20}, summary
    call = tools["body"]["items"][0]["detail"]["calls"][0]
    assert call["name"] == "report_result" and json.loads(call["arguments"]) == {"ok": True, "label": "SPEC_OK"}
    cold, cached = pair["body"]["items"]
    assert cold["detail"]["prefix_cache_hits"] == 0 and cached["detail"]["prefix_cache_hits"] > 0
    assert soak["body"]["summary"]["passed"] == 10 and soak["body"]["summary"]["completion_tokens"] == 80
