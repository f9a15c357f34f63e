"""When compare may name a winner: known-answer simulations of a box that drifts from run to run.

Each trial benches two sides of the *same* speed (true effect 0) on a box whose speed moves by up to
±25% from run to run (the spread seen between back-to-back benches of one vLLM CPU server here), and
counts how often compare names a winner. A 95% interval should do so in about 5% of trials; the
tolerance is three binomial standard errors over the trials run.
"""

import math

import numpy as np

from forklift.stats import compare_groups
from tests.stats.synthetic import as_run, bench_receipt, records

TRIALS = 400
DRIFT = 0.25
TOLERANCE = 0.05 + 3 * math.sqrt(0.05 * 0.95 / TRIALS)


def side(rng: np.random.Generator, *, runs: int, speed: float = 1.0):
    drift = list(rng.uniform(1 - DRIFT, 1 + DRIFT, runs))
    seed = int(rng.integers(1 << 31))
    cell = records(prompts=8, runs=runs, speed=speed, seed=seed, run_speed=drift)
    return as_run(bench_receipt({"single": cell}, kept=list(range(runs))))


def claims(metric: str, *, runs: int, aa_benches: int = 0, speed: float = 1.0, trials: int = TRIALS) -> float:
    """Fraction of trials whose verdict on `metric` names a winner (better or worse)."""
    rng = np.random.default_rng(2026)
    named = 0
    for _ in range(trials):
        a, b = side(rng, runs=runs), side(rng, runs=runs, speed=speed)
        aa = [side(rng, runs=1) for _ in range(aa_benches)] or None
        result = compare_groups([a], [b], aa_runs=aa).cells[0].metric(metric)
        named += result.claim in ("better", "worse")
    return named / trials


def test_default_four_kept_runs_name_a_winner_for_pure_drift_at_most_at_the_test_level():
    assert claims("e2e", runs=4) <= TOLERANCE
    assert claims("decode_tps", runs=4) <= TOLERANCE


def test_one_run_a_side_never_names_a_winner_without_an_aa_control():
    assert claims("e2e", runs=1, trials=100) == 0


def test_an_aa_control_floors_a_one_run_comparison_at_the_test_level():
    assert claims("e2e", runs=1, aa_benches=2) <= TOLERANCE
    assert claims("e2e", runs=1, aa_benches=4) <= TOLERANCE


def test_a_real_effect_larger_than_the_drift_is_still_found_with_the_defaults():
    # B 60% faster on a box drifting ±25%: above the design's MDE (about 53% for four runs a side here),
    # so found at least 80% of the time, the power the MDE is defined at
    assert claims("e2e", runs=4, speed=1.6, trials=100) >= 0.8
