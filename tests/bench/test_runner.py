"""Runner behaviour on the fake SSE server (a FAKE, for exact control): cells, runs kept, pacing."""

import asyncio
from pathlib import Path

import numpy as np
import pytest

from forklift.bench.recorder import BenchRecorder
from forklift.bench.runner import BenchPlan, CellSpec, cell_specs, run_bench
from forklift.bench.schema import BenchBody
from forklift.receipts import new_receipt, read_receipts
from forklift.workload.items import WorkItem, Workload
from tests.fixtures.sse import Plan


def workload(n: int) -> Workload:
    items = tuple(WorkItem(id=f"p{i}", prompt="x", max_tokens=4) for i in range(n))
    return Workload(name="w", endpoint="completions", items=items)


def run(url: str, folder: Path, cells, runs=1, warmup=0):
    plan = BenchPlan(url=url, model="fake-sse", workload=workload(6), cells=tuple(cells), runs=runs, warmup=warmup)
    body = BenchBody(url=url, model="fake-sse", mode="sweep", workload=plan.workload.identity())
    recorder = BenchRecorder(new_receipt("bench"), body, folder)
    status = asyncio.run(run_bench(plan, recorder))
    recorder.finish(status)
    return status, body


def test_cell_specs_per_mode():
    assert [c.name for c in cell_specs("sweep", [1, 2, 4], None, None, 1.0)] == ["c1", "c2", "c4"]
    assert cell_specs("single", [8], None, None, 1.0)[0].concurrency == 1
    [batch] = cell_specs("batch", [64], 256, 2.0, 0.5)
    assert (batch.name, batch.concurrency, batch.requests, batch.rate, batch.burstiness) == (
        "batch-n256-c64",
        64,
        256,
        2.0,
        0.5,
    )


def test_concurrency_is_respected(tmp_path, sse_server):
    sse_server.plan = lambda i, body: Plan(delay=0.02)
    status, body = run(sse_server.url, tmp_path, [CellSpec("c2", 2)])
    records = body.cells[0].requests
    assert status == "ok"
    # at any send time, at most 2 requests are in flight
    for r in records:
        in_flight = [o for o in records if o.send <= r.send < o.end]
        assert len(in_flight) <= 2


def test_every_kept_run_counts_and_salts_differ(tmp_path, sse_server):
    seen = []
    sse_server.plan = lambda i, body: seen.append(body["prompt"]) or Plan()
    _status, body = run(sse_server.url, tmp_path, [CellSpec("c1", 1)], runs=2)
    cell = body.cells[0]
    assert cell.kept_runs == [0, 1] and cell.aggregate["requests"] == 12
    assert len(set(seen)) == 12  # every (run, prompt) had its own salt
    [(_, receipt)] = read_receipts([tmp_path])
    assert receipt.status == "ok" and len(receipt.body["cells"][0]["requests"]) == 12


def test_poisson_pacing_spaces_the_sends(tmp_path, sse_server):
    rate = 40.0
    status, body = run(sse_server.url, tmp_path, [CellSpec("paced", 8, requests=30, rate=rate)])
    sends = np.sort([r.send for r in body.cells[0].requests])
    gaps = np.diff(sends)
    assert status == "ok" and body.cells[0].request_rate == rate
    assert 0.5 / rate < gaps.mean() < 2.0 / rate  # ~1/rate on average
    assert gaps.std() > 0.2 / rate  # exponential gaps vary; a fixed interval would not


def test_unreachable_server_stops_later_cells(tmp_path):
    status, body = run("http://127.0.0.1:9", tmp_path, [CellSpec("c1", 1), CellSpec("c2", 2)])
    assert status == "failed" and [c.name for c in body.cells] == ["c1"]
    assert body.cells[0].complete is False


@pytest.mark.parametrize("mode, levels, requests", [("batch", [1, 2], 8), ("batch", [4], None)])
def test_batch_needs_one_level_and_a_count(mode, levels, requests):
    from forklift.errors import UsageError

    with pytest.raises(UsageError, match="batch needs one --concurrency C and --requests N"):
        cell_specs(mode, levels, requests, None, 1.0)


def test_a_plan_without_cells_is_refused_by_the_bench_not_an_index_error():
    from forklift.errors import UsageError

    with pytest.raises(UsageError, match="--concurrency: give at least one level"):
        cell_specs("sweep", [], None, None, 1.0)
    with pytest.raises(UsageError, match="a bench needs at least one cell"):
        BenchPlan(url="http://127.0.0.1:9", model="m", workload=workload(1), cells=())
