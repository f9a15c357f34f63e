"""Known answers on real receipts: vLLM CPU 0.32.0 on this box, the tests' tiny model, the stats cohort.

Recorded by tests/stats/data/regenerate.py (the receipts are small JSON fixtures):
  aa1-a, aa1-b      two benches of one plain server, one kept run each (the old default)
  plain-a, plain-b  two benches of the same server with the default (warm-up + 4 kept runs)
  ngram             the n-gram speculation server with the default
Benches of one server must never name a winner; the n-gram effect must still be found.
"""

from pathlib import Path

import pytest

from forklift.receipts import read_receipts
from forklift.stats import bench_runs, compare_groups

RECEIPTS = Path(__file__).with_name("data") / "receipts"
WINNER = ("better", "worse")


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


def test_one_run_a_side_prints_the_effect_as_not_claimable_or_noise():
    result = cell("aa1-a", "aa1-b")
    e2e = result.metric("e2e")
    assert e2e.estimate.unit == "prompt"
    assert e2e.claim == ("unclaimable" if e2e.estimate.excludes_zero else "noise")


def test_the_default_compares_over_runs_with_an_mde_from_the_same_estimator():
    e2e = cell("plain-a", "plain-b").metric("e2e")
    assert e2e.estimate.unit == "run" and e2e.estimate.runs == 4 and e2e.estimate.mde is not None


def test_ngram_against_plain_is_still_found_with_the_defaults():
    result = cell("plain-a", "ngram")
    tok_chunk = result.metric("tok_chunk")
    assert tok_chunk.claim == "better" and tok_chunk.a < 1.3 < 1.5 < tok_chunk.b, tok_chunk.verdict


def test_a_two_bench_aa_floor_is_wide_and_names_no_winner():
    # one degree of freedom: t = 12.7 times the one observed bench-to-bench shift
    same = cell("aa1-a", "plain-b", aa_runs=side("aa1-a") + side("aa1-b"))
    assert all(m.claim not in WINNER for m in same.metrics)
    assert same.metric("e2e").estimate.floor is not None


def test_an_aa_floor_of_ten_plain_runs_keeps_the_ngram_effect():
    aa = side("aa1-a") + side("aa1-b") + side("plain-a") + side("plain-b")  # 1 + 1 + 4 + 4 kept runs
    found = cell("aa1-a", "ngram", aa_runs=aa).metric("tok_chunk")
    assert found.estimate.floor is not None and found.claim == "better", found.verdict
