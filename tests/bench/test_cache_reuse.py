"""A salted bench that hit the prefix cache is flagged: replayed on the real H200 receipts (docs/gpu-report)."""

from __future__ import annotations

from pathlib import Path

from forklift.bench.metrics import cache_reuse
from forklift.bench.schema import BenchBody
from forklift.receipts.store import read_receipt

SERVING = Path(__file__).resolve().parents[2] / "docs" / "gpu-report" / "receipts" / "serving"


def body(name: str) -> BenchBody:
    (path,) = SERVING.glob(f"{name}-*-bench-*.json.gz")
    return BenchBody.model_validate(read_receipt(path).body)


def test_second_bench_on_one_server_is_flagged_in_the_cells_that_reused_the_cache():
    # The sweep ran after the single-stream bench of the same 512:128 prompts: its c1 cell re-sent the
    # 16 prompts single had sent (16 x 496 cached tokens); the other cells' salts were new.
    warnings = cache_reuse(body("sweep"))
    assert len(warnings) == 1 and warnings[0].startswith("cell c1: 7,936 prompt tokens hit the prefix cache")
    assert "another --salt-nonce" in warnings[0]


def test_first_bench_on_a_fresh_server_is_not_flagged():
    assert cache_reuse(body("single")) == []


def test_unsalted_workload_is_never_flagged():
    sweep = body("sweep")
    unsalted = sweep.model_copy(update={"workload": sweep.workload.model_copy(update={"salted": False})})
    assert cache_reuse(unsalted) == []


def test_a_conversation_reusing_its_own_history_is_not_flagged_but_a_warm_first_turn_is():
    # The H100 run of 2 x 4 turns (docs/gpu-report/protocols) warned of 144,672 cached tokens: its own histories.
    sweep = body("single")
    cell = sweep.cells[0]
    turns = {"1": {"prefix_hits": 0}, "2": {"prefix_hits": 4000}}
    history = cell.model_copy(update={"metrics_delta": {"prefix_cache_hits": 4000}, "aggregate": {"turns": turns}})
    assert cache_reuse(sweep.model_copy(update={"cells": [history]})) == []
    warm = {"1": {"prefix_hits": 496}, "2": {"prefix_hits": 4000}}
    seen = history.model_copy(update={"aggregate": {"turns": warm}})
    (warning,) = cache_reuse(sweep.model_copy(update={"cells": [seen]}))
    assert warning.startswith(f"cell {cell.name}: 496 prompt tokens hit the prefix cache")
