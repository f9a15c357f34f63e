"""The verdict rule, the margins, the planner and the GPU-state flags: known answers on small inputs."""

from dataclasses import dataclass, field

import numpy as np
import pytest

from forklift.errors import UsageError
from forklift.stats import METRICS, Estimate, judge, margins, parse_margin
from forklift.stats.design import boots_needed, design_mde, pilot, plan, target_note, two_stage_estimate
from forklift.stats.gpustate import gpu_flags
from forklift.stats.units import UnitTable, components

TPOT = next(m for m in METRICS if m.key == "tpot")
DECODE = next(m for m in METRICS if m.key == "decode_tps")


def boots(change, low, high, mde=0.005, **fields):
    return Estimate(
        change=change, low=low, high=high, paired=False, n_a=3, n_b=3, mde=mde, unit="boot", df=4.0, **fields
    )


@pytest.mark.parametrize(
    ("estimate", "kind", "words"),
    [
        (
            boots(0.001, 0.0, 0.002),
            "no practical change",
            "no practical change (Δ +0.1%, CI +0.0%..+0.2%, margin ±1.0%, 3 boots a side)",
        ),
        (boots(0.03, 0.02, 0.04), "slower", "B slower by 3.0% (CI 2.0%..4.0%, margin ±1.0%, 3 boots a side)"),
        (
            boots(0.008, 0.002, 0.014),
            "slower",
            "B slower by 0.8% (CI 0.2%..1.4%, margin ±1.0%, 3 boots a side)",
        ),  # partly outside
        (boots(0.0, -0.03, 0.03, mde=0.045), "undecided", "undecided (MDE 4.5% > margin ±1.0%; Δ +0.0%"),
        (boots(0.004, -0.004, 0.012, mde=0.009), "within noise", "within noise (Δ +0.4%, CI -0.4%..+1.2%"),
        (boots(0.2, 0.1, 0.3, unclaimable="boot"), "not claimable", "not claimable (Δ +20.0%, CI +10.0%..+30.0%"),
    ],
)
def test_the_words_follow_the_interval_and_the_margin(estimate, kind, words):
    verdict = judge(TPOT, estimate)
    assert verdict.kind == kind and verdict.words.startswith(words)
    assert (verdict.low, verdict.high, verdict.unit, verdict.n_a) == (estimate.low, estimate.high, "boot", 3)
    assert verdict.worse is (True if kind == "slower" else None)


def test_higher_is_better_metrics_say_slower_when_lower():
    verdict = judge(DECODE, boots(-0.03, -0.04, -0.02))
    assert verdict.kind == "slower" and verdict.worse and verdict.words.startswith("B slower by 3.0%")


def test_margins_parse_per_metric_and_for_all_and_refuse_in_one_line():
    assert parse_margin("tpot=2%") == ("tpot", 0.02) and parse_margin("0.5") == (None, 0.005)
    given = margins(dict([parse_margin("3%"), parse_margin("ttft=10")]))
    assert given["ttft"] == 0.10 and given["tpot"] == 0.03
    assert margins()["e2e"] == 0.01
    for bad in ("tpot", "speed=1%", "tpot=150%"):
        with pytest.raises(UsageError):
            parse_margin(bad)


def test_the_planner_reaches_its_target_and_says_why():
    design = plan(0.005, 0.01, 0.02, request_cv=0.05, requests_per_run=32)
    assert design.reaches_target and design.mde <= 0.02 and design.boots_per_build >= 2
    assert design.requests_per_run >= 4 * 0.05**2 / 0.005**2  # per-request noise under a quarter of run noise
    assert "boots a build reach MDE" in design.why
    hopeless = plan(0.1, 0.15, 0.01, max_boots=6)
    assert not hopeless.reaches_target and hopeless.boots_per_build == 6 and "even 6 boots" in hopeless.why
    with pytest.raises(ValueError):
        plan(0.01, 0.01, 0)


def test_the_two_stage_rule_uses_the_pilots_sd_and_degrees_of_freedom():
    a, b = np.array([0.0, 0.01, -0.01]), np.array([0.02, 0.03, 0.01])
    stage = pilot(a, b)
    assert stage.df == 4 and stage.sd == pytest.approx(0.01)
    needed = boots_needed(stage, 0.02, 12)
    assert design_mde(0.01**2, needed, df=4) <= 0.02 < design_mde(0.01**2, needed - 1, df=4)
    final = two_stage_estimate(np.r_[a, a], np.r_[b, b], stage)
    assert final.df == 4 and final.n_a == 6 and final.change == pytest.approx(np.expm1(0.02))
    with pytest.raises(ValueError):
        pilot(a[:1], b[:1])


def test_target_mde_note_names_the_boots_needed():
    note = target_note(boots(0.0, -0.03, 0.03, mde=0.045), 0.01)
    assert note.startswith("this design's MDE is 4.5% over 3 + 3 boots") and "boots a side" in note
    assert "unknown with one boot a side" in target_note(boots(0.2, 0.1, 0.3, unclaimable="boot"), 0.01)


def test_components_separate_run_and_boot_spread_and_flag_a_trend():
    positions = np.tile(np.arange(5), 2)
    drift = np.r_[np.array([0.0, 0.02, 0.04, 0.06, 0.08]), np.array([0.0, 0.02, 0.04, 0.06, 0.08]) + 0.1]
    noisy = drift + np.array([0.001, -0.001, 0.0, 0.001, -0.001] * 2)
    comps = components(UnitTable(boots=["x"] * 5 + ["y"] * 5, positions=positions, means=noisy))
    assert comps.runs == 10 and comps.boots == 2 and comps.drifting and comps.trend == pytest.approx(0.02, abs=1e-3)
    assert "TREND +1.98% a run (p=0.00)" in comps.summary()
    flat = components(UnitTable(boots=["x"] * 4, positions=np.arange(4), means=np.array([0.0, 0.01, -0.01, 0.0])))
    assert (
        not flat.drifting and flat.boot_cv is None and flat.run_cv == pytest.approx(np.std([0, 0.01, -0.01, 0], ddof=1))
    )


@dataclass
class Reading:
    """One GPU's state over a run, with the fields forklift.stats.gpustate reads (the bench's GpuState has more)."""

    index: int = 0
    sm_clock_mhz: float | None = 1980.0
    memory_clock_mhz: float | None = 2619.0
    throttle_reasons: list[str] = field(default_factory=list)


def test_a_throttled_or_slow_clocked_run_is_flagged_and_steady_runs_are_not():
    runs = [("r#1", [Reading()]), ("r#2", [Reading(sm_clock_mhz=1700.0)]), ("r#3", [Reading()]), ("r#4", [Reading()])]
    runs.append(("r#5", [Reading(throttle_reasons=["hw_thermal_slowdown"])]))
    flags = gpu_flags(runs)
    assert len(flags) == 2
    assert flags[0].startswith("run r#2 GPU 0: SM clock 1700 MHz vs median 1980 (-14%)")
    assert flags[1] == "run r#5 GPU 0: throttled (hw_thermal_slowdown)"
    assert gpu_flags([("r#1", [Reading()]), ("r#2", [Reading(sm_clock_mhz=1960.0)])]) == []


def test_throttling_most_runs_share_is_said_once_and_the_run_without_it_is_flagged():
    """A whole cell at the power cap (the H200 at C16): one line for the cell, a flag only for the run unlike it."""
    capped = [(f"r#{i}", [Reading(throttle_reasons=["sw_power_cap"])]) for i in range(1, 5)]
    flags = gpu_flags([*capped, ("r#5", [Reading()])])
    assert flags == ["GPU 0: 4 of 5 runs throttled (sw_power_cap)", "run r#5 GPU 0: not throttled"]
    assert gpu_flags(capped[:1]) == ["run r#1 GPU 0: throttled (sw_power_cap)"]  # one run: nothing to share
