"""Known answers for the ship decision: seeded simulations of a box that varies run to run, boot to boot
and drifts within a boot (tests/stats/simulate.py), judged by forklift's own statistics.

Each rate is over 400 trials; a false-claim rate passes at the 5 % level plus three binomial
standard errors. Power is asserted where the design was chosen to have it.
"""

import numpy as np
import pytest

from forklift.stats import judge
from forklift.stats.interval import pooled_change
from tests.stats.simulate import (
    GPU_BOUND,
    H200_C1,
    H200_C16,
    HOST_BOUND,
    TPOT,
    Box,
    across_boots,
    boot_unit,
    campaign_boots,
    claim_rate,
    pooled_unit,
    rate_of,
    runs_as_unit,
    sequential,
    tolerance,
)


@pytest.mark.parametrize("box", [GPU_BOUND, HOST_BOUND], ids=["gpu-bound", "host-bound"])
@pytest.mark.parametrize("boots", [2, 3, 6])
def test_aa_across_boots_claims_at_most_at_the_test_level_with_the_boot_as_unit(box, boots):
    a, b = across_boots(box, boots, runs=4)
    assert claim_rate(boot_unit(a, b)) <= tolerance()


@pytest.mark.parametrize("boots", [1, 2])
def test_the_old_runs_as_unit_method_invents_regressions_on_the_same_data(boots):
    # the cross-boot false regression: a t-interval over runs cannot contain a boot's shift
    a, b = across_boots(GPU_BOUND, boots, runs=4)
    assert claim_rate(runs_as_unit(a, b)) > 0.2
    assert claim_rate(boot_unit(a, b)) <= tolerance()


def test_the_two_stage_rule_keeps_false_claims_at_the_test_level():
    kinds, used = sequential(GPU_BOUND, runs=4, target=0.02, max_boots=12)
    assert claim_rate(kinds) <= tolerance()
    assert min(used) >= 3 and max(used) <= 12 and len(set(used)) > 1  # it did choose, trial by trial


def test_the_two_stage_rule_finds_a_three_percent_slowdown():
    kinds, used = sequential(GPU_BOUND, runs=4, target=0.02, max_boots=12, change=0.03)
    assert rate_of(kinds, "slower") >= 0.95  # measured 0.99 with 7.4 boots a side on average
    assert np.mean(used) < 12


def test_a_true_tenth_of_a_percent_with_a_tight_interval_is_no_practical_change():
    tight = Box(request=0.01, run=0.001, boot=0.001, drift=0.0005)
    a, b = across_boots(tight, 4, 4, change=0.001)
    kinds = boot_unit(a, b)
    assert rate_of(kinds, "no practical change") >= 0.95
    assert claim_rate(kinds) <= tolerance()  # statistically real or not, 0.1 % is never "slower"


def test_a_true_three_percent_slowdown_with_enough_boots_reads_slower():
    # 4 boots x 4 runs a side on the GPU-bound box: MDE about 2.7 %, power at 3 % measured 0.90
    a, b = across_boots(GPU_BOUND, 4, 4, change=0.03)
    assert rate_of(boot_unit(a, b), "slower") >= 0.8
    a, b = across_boots(GPU_BOUND, 6, 4, change=0.03)
    assert rate_of(boot_unit(a, b), "slower") >= 0.95


def test_too_few_boots_for_the_margin_read_undecided_not_within_noise():
    a, b = across_boots(HOST_BOUND, 2, 4)
    kinds = boot_unit(a, b)
    assert rate_of(kinds, "undecided") >= 0.9 and rate_of(kinds, "within noise") == 0


@pytest.mark.parametrize("box", [GPU_BOUND, H200_C16, HOST_BOUND], ids=["gpu-bound", "h200-c16", "host-bound"])
@pytest.mark.parametrize(("repeats", "trend"), [(1, 0.0), (1, 0.003), (2, 0.0)])
def test_a_campaign_pooling_the_boot_sd_over_its_builds_claims_at_most_at_the_test_level(box, repeats, trend):
    # A, noop and A again in ABBA order, a drift over the campaign's boots or none: noop vs A is an A/A
    groups = campaign_boots(box, repeats, (0.0, 0.0, 0.03), trend=trend)
    assert claim_rate(pooled_unit(groups, 1)) <= tolerance()


def test_two_boots_a_side_of_three_builds_decide_the_h200_known_answers_at_c1():
    # the ship campaign's design: boots A N S S N A, the boot sd pooled over the three builds (3 df)
    groups = campaign_boots(H200_C1, 1, (0.0, 0.0, 0.03))
    assert rate_of(pooled_unit(groups, 1), "no practical change") >= 0.95  # measured 0.993
    assert rate_of(pooled_unit(groups, 2), "slower") >= 0.95  # measured 1.000


def test_pooling_gains_power_over_welch_on_the_same_boots():
    groups = campaign_boots(H200_C16, 1, (0.0, 0.0, 0.03))
    welch = boot_unit(groups[0][:, :, None], groups[2][:, :, None])
    assert (
        rate_of(pooled_unit(groups, 2), "slower") > rate_of(welch, "slower") + 0.3
    )  # measured 0.83 against Welch's 0.32


def test_the_aa_of_one_boot_a_copy_pooled_over_two_other_builds_claims_at_most_at_the_test_level():
    # the A/A of an ABBA campaign: A's two boots (first and last) are one a copy; noop and slowdown give
    # the spread. Measured 0.035. With a drift over the campaign (trend 0.003) it claims 0.095: the A/A
    # reads the drift, which is what it is for; ABBA cancels that drift in A vs a build in between.
    a, noop, slowdown = campaign_boots(H200_C16, 1, (0.0, 0.0, 0.03))
    kinds = [judge(TPOT, pooled_change(a[t, :1], a[t, 1:], [noop[t], slowdown[t]]), 0.01).kind for t in range(len(a))]
    assert claim_rate(kinds) <= tolerance()
    assert all(pooled_change(a[t, :1], a[t, 1:], [slowdown[t]]) is None for t in range(len(a)))  # one build: not pooled
