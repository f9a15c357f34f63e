"""Known answers on real receipts: vLLM CPU 0.32.0 on this box, the tests' tiny model, the stats cohort.

Recorded by tests/stats/data/regenerate.py (the receipts are small JSON fixtures):
  aa1-a, aa1-b      two benches of one plain server, one kept run each (the old default)
  plain-a, plain-b  two benches of the same server with the default (warm-up + 4 kept runs)
  ngram             the n-gram speculation server with the default
They record no boot identity, so each receipt counts as a boot of its own: benches of one server
must never name a winner, and the n-gram effect is found once an A/A floors the one-boot sides.
"""

from pathlib import Path

import pytest

from forklift.receipts import read_receipts
from forklift.stats import bench_runs, compare_groups

RECEIPTS = Path(__file__).with_name("data") / "receipts"
WINNER = ("faster", "slower", "different")


def side(name: str):
    return bench_runs(read_receipts([RECEIPTS / name]))


def cell(a: str, b: str, **kwargs):
    [result] = compare_groups(side(a), side(b), **kwargs).cells
    return result


@pytest.mark.parametrize(("a", "b"), [("aa1-a", "aa1-b"), ("plain-a", "plain-b"), ("aa1-a", "plain-b")])
def test_benches_of_one_server_never_name_a_winner(a, b):
    result = cell(a, b)
    for metric in result.metrics:
        assert metric.claim not in WINNER, (metric.metric, metric.verdict)


def test_one_run_a_side_prints_the_effect_as_not_claimable():
    e2e = cell("aa1-a", "aa1-b").metric("e2e")
    assert e2e.estimate.unit == "prompt" and e2e.claim == "not claimable"


def test_four_runs_a_side_are_one_boot_a_side_and_not_claimable_alone():
    e2e = cell("plain-a", "plain-b").metric("e2e")
    assert e2e.estimate.unit == "run" and e2e.estimate.n_a == 4 and e2e.estimate.unclaimable == "boot"
    assert e2e.claim == "not claimable" and e2e.estimate.mde is not None


def test_a_two_bench_aa_floor_is_wide_and_names_no_winner():
    # one degree of freedom: t = 12.7 times the one observed bench-to-bench shift
    same = cell("aa1-a", "plain-b", aa_runs=side("aa1-a") + side("aa1-b"))
    assert all(m.claim not in WINNER for m in same.metrics)
    assert same.metric("e2e").estimate.floor is not None


def test_an_aa_floor_of_four_benches_keeps_the_ngram_effect():
    aa = side("aa1-a") + side("aa1-b") + side("plain-a") + side("plain-b")  # four receipts: four boots, as recorded
    found = cell("plain-a", "ngram", aa_runs=aa).metric("tok_chunk")
    assert found.estimate.floor is not None and found.estimate.claimable
    assert found.claim == "faster" and found.a < 1.3 < 1.5 < found.b, found.verdict
