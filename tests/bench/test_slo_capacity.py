"""The highest load meeting an SLO at p99, on known answers: seeded cells whose true p99s are set.

Latencies are lognormal (a bench cell's TTFT is right-skewed; sigma 0.2); a failed request counts as
beyond any bound. The interval's coverage, false-claim rate and power measured here are the figures
docs/commands/bench.md states.
"""

import math

import numpy as np
import pytest

from forklift.bench.slo import Slo, capacity, p99_interval
from tests.stats.synthetic import p99_latencies, slo_cell


def verdict(p99_ms, rng, n=600):
    return capacity([slo_cell("c", 1, p99_ms, rng, n)], Slo(ttft=500))["cells"][0]["verdict"]


def test_a_sweep_reads_the_highest_load_whose_p99_meets_the_bound():
    rng = np.random.default_rng(1)
    found = capacity(
        [slo_cell("c1", 1, 200, rng), slo_cell("c4", 4, 300, rng), slo_cell("c8", 8, 1500, rng)], Slo(ttft=500)
    )
    assert [row["verdict"] for row in found["cells"]] == ["meets", "meets", "misses"]
    assert found["highest"] == "c4" and found["bounds_ms"] == {"ttft": 500.0}
    point, low, high = found["cells"][2]["p99_ms"]["ttft"]
    assert 500 < low <= point <= high


def test_below_368_requests_a_p99_is_shown_beyond_a_bound_never_within_one():
    rng = np.random.default_rng(2)
    assert p99_interval(p99_latencies(200, 367, rng))[2] == math.inf
    assert p99_interval(p99_latencies(200, 368, rng))[2] < math.inf
    assert verdict(200, rng, n=64) == "undecided" and verdict(1500, rng, n=64) == "misses"


def test_a_failed_request_is_beyond_any_bound_and_a_gap_ends_the_run_of_passing_cells():
    rng = np.random.default_rng(3)
    found = capacity([slo_cell("c1", 1, 200, rng, failed=20), slo_cell("c2", 2, 200, rng)], Slo(ttft=500))
    assert found["cells"][0]["verdict"] == "misses" and found["cells"][0]["p99_ms"]["ttft"][0] == math.inf
    assert found["cells"][1]["verdict"] == "meets" and found["highest"] is None  # c1 broke the run


def test_the_interval_covers_the_true_p99_at_least_95_percent_of_the_time():
    rng = np.random.default_rng(4)
    covered = [low <= 0.5 <= high for _, low, high in (p99_interval(p99_latencies(500, 600, rng)) for _ in range(400))]
    assert np.mean(covered) >= 0.95


@pytest.mark.parametrize(("true_p99", "meets"), [(1.0, (0.0, 0.04)), (1.2, (0.0, 0.0)), (0.8, (0.9, 1.0))])
def test_false_claims_at_or_beyond_the_bound_and_power_within_it(true_p99, meets):
    rng = np.random.default_rng(5)
    rate = np.mean([verdict(500 * true_p99, rng) == "meets" for _ in range(400)])
    assert meets[0] <= rate <= meets[1]
