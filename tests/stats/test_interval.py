"""Known answers for the interval maths: planted effects found at their size, noise left as noise."""

import math

import numpy as np
import pytest
from scipy import stats

from forklift.stats.interval import (
    BOOTSTRAP_MAX,
    expanded_level,
    floor_from_units,
    minimum_detectable_effect,
    paired_change,
    pooled_change,
    unpaired_change,
    welch_change,
    with_floor,
)


def cohort(n, effect, noise, seed):
    rng = np.random.default_rng(seed)
    base = rng.uniform(20, 60, n)
    return base * rng.lognormal(0, noise, n), base * (1 + effect) * rng.lognormal(0, noise, n)


def test_planted_effect_is_found_at_its_size():
    a, b = cohort(32, 0.10, 0.05, seed=1)
    est = paired_change(a, b, seed=0)
    assert est.excludes_zero and est.paired
    assert est.low < 0.10 < est.high
    assert abs(est.change - 0.10) < 0.03


def test_planted_slowdown_has_negative_interval():
    a, b = cohort(16, -0.08, 0.03, seed=2)
    est = paired_change(a, b, seed=0)
    assert est.high < 0 and est.low < -0.08 < est.high


def test_identical_inputs_give_zero_change_and_zero_width():
    a, _ = cohort(8, 0, 0.1, seed=3)
    est = paired_change(a, a.copy(), seed=0)
    assert est.change == 0 and est.low == 0 and est.high == 0 and not est.excludes_zero
    assert est.mde == 0


def test_swapping_sides_flips_the_change_exactly():
    a, b = cohort(12, 0.05, 0.1, seed=4)
    forward, backward = paired_change(a, b), paired_change(b, a)
    assert math.isclose(math.log1p(forward.change), -math.log1p(backward.change), abs_tol=1e-12)


def test_seeded_bootstrap_is_reproducible_and_seed_dependent():
    a, b = cohort(10, 0.0, 0.1, seed=5)
    assert paired_change(a, b, seed=7) == paired_change(a, b, seed=7)
    assert paired_change(a, b, seed=7).low != paired_change(a, b, seed=8).low


def test_pure_noise_is_within_noise_in_95_percent_of_seeded_trials():
    """The interval is calibrated at 95 % (94.9 % over 4,000 trials at n=8 while building it).

    A calibrated 95 % interval meets ">= 95 %" only on average, so over 1,000
    trials we allow two Monte Carlo standard errors (1.4 points) below 95 %.
    Measured here: 94.1 % at n=8, 95.0 % at n=32; the plain percentile
    bootstrap gives 88.0 % at n=8 and fails.
    """
    trials = 1000
    for n in (8, 32):
        within = sum(not paired_change(*cohort(n, 0.0, 0.1, seed), seed=seed).excludes_zero for seed in range(trials))
        assert within / trials >= 0.95 - 2 * math.sqrt(0.05 * 0.95 / trials), (n, within)


def test_expansion_widens_small_samples_and_vanishes_for_large_ones():
    assert expanded_level(8) > 0.985
    assert abs(expanded_level(10_000) - 0.95) < 1e-3


def test_mde_matches_the_textbook_factor_for_large_samples():
    assert math.isclose(math.log1p(minimum_detectable_effect(0.01, 10_000)), 0.0280, rel_tol=0.01)


def test_planted_effect_equal_to_the_mde_is_caught_about_80_percent_of_the_time():
    n, noise = 16, 0.1
    mde = paired_change(*cohort(n, 0.0, noise, seed=0)).mde
    caught = sum(paired_change(*cohort(n, mde, noise, seed), seed=seed).excludes_zero for seed in range(200))
    assert 0.65 <= caught / 200 <= 0.95


def test_unpaired_fallback_finds_a_large_effect_but_is_wider_than_paired():
    a, b = cohort(32, 0.30, 0.05, seed=6)
    paired, unpaired = paired_change(a, b), unpaired_change(a, b)
    assert not unpaired.paired and unpaired.excludes_zero
    assert unpaired.half_width > paired.half_width


def test_too_few_values_are_refused():
    with pytest.raises(ValueError, match="at least 2"):
        paired_change(np.array([1.0]), np.array([2.0]))
    with pytest.raises(ValueError, match="at least 2"):
        unpaired_change(np.array([1.0, 2.0]), np.array([2.0]))


def test_a_slow_run_is_not_a_result_when_runs_are_the_unit():
    """Same profile on both sides, four runs each; one B run caught a busy box (every request 15%
    slower). Over 32 pooled pairs that reads as an effect; over the four runs it is noise."""
    rng = np.random.default_rng(3)
    a = rng.lognormal(0, 0.05, size=32)
    b = a * rng.lognormal(0, 0.05, size=32)
    runs = np.repeat(np.arange(4), 8)
    b[runs == 2] *= 1.15
    pooled = paired_change(a, b, seed=0)
    by_run = welch_change(
        np.array([np.log(a[runs == r]).mean() for r in range(4)]),
        np.array([np.log(b[runs == r]).mean() for r in range(4)]),
        "run",
    )
    assert pooled.excludes_zero and not pooled.claimable  # what requests as independent draws would claim
    assert not by_run.excludes_zero and by_run.claimable and by_run.n_a == 4
    assert by_run.change == pytest.approx(pooled.change)


def test_welch_needs_two_units_a_side_and_a_boot_floor_makes_one_boot_claimable():
    assert welch_change(np.array([0.0]), np.array([0.1, 0.2]), "boot") is None
    runs_of_one_boot = welch_change(np.array([0.0, 0.001, 0.002]), np.array([0.05, 0.051, 0.052]), "run")
    short = runs_of_one_boot.model_copy(update={"unclaimable": "boot"})
    assert not with_floor(short, floor_from_units([0.0, 0.01], "run"), 3, 3).claimable  # runs cannot floor boots
    floored = with_floor(short, floor_from_units([0.0, 0.01, -0.01], "boot"), 1, 1)
    assert floored.claimable and floored.widened and floored.df == 2
    half = stats.t.ppf(0.975, 2) * 0.01 * math.sqrt(2)
    assert floored.high == pytest.approx(math.expm1(0.05 + half))


def test_past_the_bootstrap_limit_the_interval_is_students_t_and_agrees_with_the_bootstrap():
    a, b = cohort(BOOTSTRAP_MAX + 1, 0.02, 0.05, seed=5)
    big = paired_change(a, b)
    logs = np.log(b) - np.log(a)
    half = stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / math.sqrt(len(logs))
    assert big.low == pytest.approx(math.expm1(logs.mean() - half))
    small = paired_change(a[:BOOTSTRAP_MAX], b[:BOOTSTRAP_MAX], resamples=999)
    assert small.low == pytest.approx(big.low, abs=1e-3) and small.high == pytest.approx(big.high, abs=1e-3)


def test_pooled_change_is_students_t_with_the_within_build_sd_of_every_build():
    a, b, c = np.log([1.00, 1.02]), np.log([1.10, 1.12]), np.log([0.90, 0.96])
    est = pooled_change(a, b, [c])
    deviations = np.concatenate([a - a.mean(), b - b.mean(), c - c.mean()])
    sd = np.sqrt((deviations**2).sum() / 3)
    half = stats.t.ppf(0.975, 3) * sd  # sqrt(1/2 + 1/2) = 1
    centre = b.mean() - a.mean()
    assert est.df == 3.0 and est.pooled == 3 and est.unit == "boot"
    assert est.low == pytest.approx(np.expm1(centre - half)) and est.high == pytest.approx(np.expm1(centre + half))
    assert pooled_change(a[:1], b[:1], []) is None  # one boot a side and nothing else: no degree of freedom
    # one boot a side: one other build's spread alone is not pooled, two builds' spreads are
    assert pooled_change(a[:1], b[:1], [c]) is None
    one_each = pooled_change(a[:1], b[:1], [c, c + 0.1])
    assert one_each is not None and one_each.df == 2.0 and one_each.pooled == 4
    assert pooled_change(a, b[:1], [c]) is not None  # A's own spread and another build's
