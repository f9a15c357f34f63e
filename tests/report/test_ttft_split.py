"""The engine's TTFT split (vLLM's queue and prefill histograms): weighted over kept runs, and named in the report."""

import pytest

from forklift.bench.schema import RunFacts, ServerLatency
from forklift.report.numbers import cell_notes
from forklift.stats.compare import compare_cell
from tests.stats.synthetic import as_run, bench_receipt, records


def run_with_server(seed: int, facts: dict[int, tuple[int, float, float | None, float | None]]):
    """A bench run of one cell whose run `r` read (requests, TTFT mean, queue mean, prefill mean) from the server."""
    receipt = bench_receipt({"c1": records(4, seed=seed)})
    body = receipt.body
    body["cells"][0]["run_facts"] = [
        RunFacts(
            run=run, server=ServerLatency(requests=n, ttft_mean_ms=ttft, queue_mean_ms=queue, prefill_mean_ms=prefill)
        ).model_dump(mode="json")
        for run, (n, ttft, queue, prefill) in facts.items()
    ]
    return as_run(receipt.model_copy(update={"body": body}))


def test_the_split_weighs_kept_runs_by_their_requests_and_the_report_says_where_the_first_token_went():
    # kept run 1 of each boot; run 0 (the warm-up) read another TTFT and must not count
    a = [
        run_with_server(1, {0: (4, 90.0, 5.0, 80.0), 1: (4, 20.0, 0.0, 16.0)}),
        run_with_server(2, {0: (4, 90.0, 5.0, 80.0), 1: (12, 28.0, 0.4, 24.0)}),
    ]
    b = [run_with_server(3, {1: (4, 25.0, 0.0, 21.0)})]
    cell = compare_cell(a, b, "c1")
    split = cell.server_ttft_a
    assert split is not None
    assert split.ttft_ms == pytest.approx((20 * 4 + 28 * 12) / 16)
    assert split.queue_ms == pytest.approx(0.3) and split.prefill_ms == pytest.approx((16 * 4 + 24 * 12) / 16)
    assert split.frontend_ms == pytest.approx(26.0 - 0.3 - 22.0)
    notes = "; ".join(cell_notes(cell))
    assert "vLLM's TTFT mean: A 26.0 ms = queue 0.3 + prefill 22.0 + frontend 3.7; B 25.0 ms" in notes


def test_a_server_without_queue_and_prefill_histograms_is_not_read_and_no_note_without_any():
    old = [run_with_server(1, {1: (4, 20.0, None, None)})]  # an engine that exposes TTFT alone
    new = [run_with_server(2, {1: (4, 25.0, 0.1, 20.0)})]
    cell = compare_cell(old, new, "c1")
    assert cell.server_ttft_a is None and cell.server_ttft_b is not None
    assert any("A not read; B 25.0 ms = queue 0.1 + prefill 20.0" in note for note in cell_notes(cell))
    bare = compare_cell(old, old, "c1")
    assert not any("vLLM's TTFT" in note for note in cell_notes(bare))
