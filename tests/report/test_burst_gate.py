"""The [ship] gate over a cell whose sides the host delivered unlike (forklift.stats.bursts), on known answers.

Campaigns of seeded synthetic receipts written through the real schemas, shaped as the CPU known-answer
campaign (tests/campaign/test_known_answers.py): A against one candidate, two boots a side at c4, gates on
decode tok/s (10%) and E2E (25%). In the CI run this stands for, both of noop's boots delivered most c4
answers whole (TTFT = E2E, about twice A's E2E) and the E2E gate read HOLD on a comment-only patch.
"""

from forklift.receipts import new_receipt
from forklift.report import load_campaign, render_report
from forklift.report.ship import PLAN_KIND, decide, judge_interval
from forklift.textsafe import markdown
from tests.stats.synthetic import bench_receipt, delivered_in_burst, records, written

GATES = [{"metric": "decode_tps", "cells": ["c4"], "worse": "10%"}, {"metric": "e2e", "cells": ["c4"], "worse": "25%"}]


def campaign(tmp_path, *, speed=1.0, bursts_a=(), bursts_b=()):
    """A and B, two boots each in ABBA order; `bursts_*`: which requests (index in a boot) came in a burst."""
    folder = tmp_path / "receipts"
    order = [("A", 1, bursts_a, 1.0), ("B", 10, bursts_b, speed), ("B", 11, bursts_b, speed), ("A", 2, bursts_a, 1.0)]
    for build, seed, bursts, side_speed in order:
        sent = records(prompts=16, runs=4, seed=seed, speed=side_speed)
        sent = [delivered_in_burst(r) if i in bursts else r for i, r in enumerate(sent)]
        receipt = bench_receipt({"c4": sent}, concurrency={"c4": 4}, kept=[0, 1, 2, 3], boot=f"{build}-{seed}")
        written(receipt.model_copy(update={"build": build}), folder)
    written(new_receipt(PLAN_KIND, body={"baseline": "A", "ship": {"gates": GATES}}), folder)
    return folder


def gates(folder):
    (decision,) = decide(loaded := load_campaign(folder), loaded.ship)
    return decision.decision, {r.gate.metric: r for r in decision.results}


def test_a_side_delivered_in_bursts_makes_its_latency_gate_undecided_not_hold(tmp_path):
    folder = campaign(tmp_path, bursts_b={i for i in range(64) if i % 8})  # the same build; 7 requests in 8 held
    decision, by_metric = gates(folder)
    e2e = by_metric["e2e"]
    reason = "answers delivered in bursts on B (112 of 128 kept requests) more often than on A (0 of 128; Fisher p ="
    assert decision == "UNDECIDED" and e2e.outcome == "undecided" and e2e.evidence.startswith(reason)
    # the interval the gate read is the host's (B's E2E about doubled): without the guard, a HOLD
    found = load_campaign(folder).rows[0].result.metric("e2e")
    estimate = found.estimate
    assert (
        estimate.low > 0.5
        and judge_interval(estimate.change, estimate.low, estimate.high, estimate.mde, estimate.claimable, False, 0.25)
        == "hold"
    )
    assert by_metric["decode_tps"].outcome == "pass"  # judged on what streamed: burst requests are out of it
    report = render_report(folder, tmp_path / "report.md")[1][0].read_text()
    decision_row = next(line for line in report.splitlines() if line.startswith("| B | E2E c4"))
    assert "UNDECIDED" in decision_row and markdown(found.decision.unlike) in decision_row
    assert markdown(f"undecided: {found.decision.unlike}") in report  # the paired detail's verdict


def test_both_sides_streaming_a_real_slowdown_still_holds_on_its_latency_gate(tmp_path):
    decision, by_metric = gates(campaign(tmp_path, speed=1 / 1.4))  # B 40% slower at every step
    assert decision == "HOLD" and by_metric["e2e"].outcome == "hold" and "bursts" not in by_metric["e2e"].evidence


def test_stray_burst_requests_on_one_side_are_no_reason_to_withhold_the_gate(tmp_path):
    decision, by_metric = gates(campaign(tmp_path, bursts_a={5}))  # one request on each of A's boots: 2 of 128
    assert by_metric["e2e"].outcome == "pass" and "bursts" not in by_metric["e2e"].evidence
    assert decision == "SHIP"
