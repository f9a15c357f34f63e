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
