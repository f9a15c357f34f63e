"""The [ship] gate `slo_capacity` on known answers: bench receipts written through the real schemas, each cell's
TTFT seeded with a known true p99 (tests/stats/synthetic.py), its verdicts computed by forklift.bench.slo."""

import numpy as np

from forklift.bench.schema import BenchBody
from forklift.bench.slo import Slo, capacity
from forklift.receipts import new_receipt
from forklift.report import load_campaign
from forklift.report.ship import PLAN_KIND, decide
from tests.stats.synthetic import slo_cell, workload, written

SLO = Slo(ttft=500)
MET, MISSED = 200, 1500  # true p99s (ms): 600 requests show them within and beyond the bound


def bench(folder, build, p99s, rng, n=600):
    """One boot's sweep c1, c2, c4 with these true p99s, as the campaign's bench suite with slo writes it."""
    cells = [slo_cell(f"c{c}", c, p99, rng, n) for c, p99 in zip((1, 2, 4)[: len(p99s)], p99s, strict=True)]
    body = BenchBody(url="http://127.0.0.1:8000", model="tiny", mode="sweep", workload=workload(), cells=cells)
    body.slo_capacity = capacity(cells, SLO)
    written(new_receipt("bench", build=build, setting="tiny", body=body.model_dump(mode="json")), folder)


def judged(tmp_path, a, b, n=600, results=1):
    folder, rng = tmp_path / "receipts", np.random.default_rng(7)
    for p99s in a:
        bench(folder, "A", p99s, rng, n)
    for p99s in b:
        bench(folder, "B", p99s, rng, n)
    gates = [{"metric": "slo_capacity"}]
    written(new_receipt(PLAN_KIND, body={"baseline": "A", "ship": {"gates": gates}}), folder)
    (decision,) = decide(campaign := load_campaign(folder), campaign.ship)
    if results != 1:
        assert len(decision.results) == results
        return decision.decision, decision.results
    (result,) = decision.results
    return decision.decision, result


def test_the_same_capacity_ships(tmp_path):
    same = (MET, MET, MISSED)
    decision, result = judged(tmp_path, [same, same], [same, same])
    assert decision == "SHIP" and result.where == "tiny / ttft ≤ 500 ms"
    assert result.evidence == (
        "highest meeting: A c2 (c1 meets, c2 meets, c4 misses; 2 boots); B c2 (c1 meets, c2 meets, c4 misses; 2 boots)"
    )


def test_a_candidate_losing_a_level_holds(tmp_path):
    decision, result = judged(tmp_path, [(MET, MET, MISSED)], [(MET, MISSED, MISSED)])
    assert decision == "HOLD" and "B c1 (c1 meets, c2 misses, c4 misses" in result.evidence


def test_one_boot_missing_a_level_holds_the_build_to_it(tmp_path):
    decision, _ = judged(tmp_path, [(MET, MET, MISSED)], [(MET, MET, MISSED), (MET, MISSED, MISSED)])
    assert decision == "HOLD"


def test_too_few_requests_to_show_a_p99_within_the_bound_is_undecided(tmp_path):
    decision, result = judged(tmp_path, [(MET, MET, MISSED)], [(MET, MET, MISSED)], n=64)
    assert decision == "UNDECIDED"
    assert "A none..c2 (c1 undecided, c2 undecided, c4 misses" in result.evidence


def test_too_few_requests_leave_a_possibly_better_candidate_undecided(tmp_path):
    decision, _ = judged(tmp_path, [(MET, MET, MISSED)], [(MET, MET, MET)], n=64)
    assert decision == "UNDECIDED"


def test_sweeps_of_other_cells_are_not_compared(tmp_path):
    decision, results = judged(tmp_path, [(MET, MET, MISSED)], [(MET, MET)], results=2)
    assert decision == "UNDECIDED"
    assert {r.evidence for r in results} == {"no slo_capacity of both builds on this sweep"}


def test_a_campaign_without_slo_is_undecided_never_a_pass(tmp_path):
    folder = tmp_path / "receipts"
    body = BenchBody(url="http://127.0.0.1:8000", model="tiny", mode="sweep", workload=workload())
    for build in ("A", "B"):
        written(new_receipt("bench", build=build, setting="tiny", body=body.model_dump(mode="json")), folder)
    written(new_receipt(PLAN_KIND, body={"baseline": "A", "ship": {"gates": [{"metric": "slo_capacity"}]}}), folder)
    (decision,) = decide(campaign := load_campaign(folder), campaign.ship)
    assert decision.decision == "UNDECIDED" and "no bench receipt with slo_capacity" in decision.results[0].evidence
