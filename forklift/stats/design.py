"""Precision on purpose: choose a design for a target MDE, and add boots by a rule that keeps claims at 5 %.

Model, on the log scale of one metric (forklift.stats.units): a boot's mean over R runs of N
requests varies by boot_cv^2 + (run_cv^2 + request_cv^2 / N) / R, and B - A over k boots a side
has SE = sqrt(2 var / k). `plan` picks N so per-request noise is small beside run-to-run noise,
R by the classic two-stage sampling optimum (more runs a boot when boots cost more and vary
less), and the fewest boots k whose MDE reaches the target.

The sequential rule is Stein's two-stage procedure (Stein 1945): k0 pilot boots a side give a
pooled sd s0 with 2 k0 - 2 degrees of freedom; the boots needed are computed from s0 alone (capped
by the budget), added, and the final interval is Δ ± t(0.975, 2 k0 - 2) s0 sqrt(2 / k). With
normal boot means the overall mean is independent of s0 whatever k it chose, so
Δ / (s0 sqrt(2 / k)) is exactly Student's t: the false-claim rate is 5 % by construction, not by
approximation. (Recomputing the sd at each look and stopping once the interval is narrow enough
selects a small sd and under-covers; this rule does not peek.)
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel
from scipy import stats

from forklift.stats.interval import LEVEL, POWER, Estimate

MIN_BOOTS = 2
MAX_RUNS = 10


def mde_factor(df: float) -> float:
    """t(0.975, df) + t(0.80, df): the MDE in standard errors."""
    return float(stats.t.ppf(1 - (1 - LEVEL) / 2, df) + stats.t.ppf(POWER, df))


def boot_variance(run_cv: float, boot_cv: float, request_cv: float, requests: int, runs: int) -> float:
    """Variance of one boot's mean log value under the model above."""
    return boot_cv**2 + (run_cv**2 + request_cv**2 / requests) / runs


def design_mde(variance: float, boots: int, df: float | None = None) -> float:
    """MDE of B - A with `boots` a side whose boot means vary by `variance` (df: 2 boots - 2 unless given)."""
    df = 2 * boots - 2 if df is None else df
    return math.expm1(mde_factor(df) * math.sqrt(2 * variance / boots))


def boots_for(variance: float, target: float, max_boots: int, df: float | None = None) -> int | None:
    """The fewest boots a side (>= 2) whose MDE is at most `target`; None when `max_boots` cannot reach it."""
    for boots in range(MIN_BOOTS, max_boots + 1):
        if design_mde(variance, boots, df) <= target:
            return boots
    return None


class Design(BaseModel):
    requests_per_run: int
    runs_per_boot: int
    boots_per_build: int
    mde: float  # the MDE of this design (fraction)
    reaches_target: bool
    why: str


def plan(
    run_cv: float,
    boot_cv: float,
    target_mde: float,
    *,
    request_cv: float = 0.0,
    requests_per_run: int = 64,
    max_requests: int = 4096,
    boot_seconds: float = 120.0,
    run_seconds: float = 30.0,
    max_boots: int = 12,
) -> Design:
    """A design (requests per run, runs per boot, boots per build) for `target_mde`, from pilot components.

    `requests_per_run` is the pilot's (the least chosen); `run_seconds` what one run of it took.
    """
    if target_mde <= 0:
        raise ValueError(f"target MDE must be positive, got {target_mde}")
    requests = requests_per_run
    if run_cv > 0 and request_cv > 0:  # per-request noise at most a quarter of the run-to-run variance
        requests = min(max_requests, max(requests, math.ceil(4 * request_cv**2 / run_cv**2)))
    seconds = run_seconds * requests / requests_per_run
    within = run_cv**2 + request_cv**2 / requests
    if boot_cv > 0:
        runs = round(math.sqrt(boot_seconds / seconds * within / boot_cv**2))
    else:
        runs = MAX_RUNS if within > 0 else MIN_BOOTS
    runs = min(MAX_RUNS, max(2, runs))
    variance = boot_variance(run_cv, boot_cv, request_cv, requests, runs)
    boots = boots_for(variance, target_mde, max_boots)
    chosen = boots or max_boots
    mde = design_mde(variance, chosen)
    why = (
        f"run-to-run {run_cv:.2%}, boot-to-boot {boot_cv:.2%}, per request {request_cv:.2%}: "
        f"{requests} requests a run keep per-request noise under a quarter of run-to-run; "
        f"{runs} runs a boot balance a boot ({boot_seconds:.0f} s) against a run ({seconds:.0f} s); "
        + (
            f"{chosen} boots a build reach MDE {mde:.2%} <= {target_mde:.2%}"
            if boots
            else f"even {max_boots} boots a build reach only MDE {mde:.2%} > {target_mde:.2%}"
        )
    )
    return Design(
        requests_per_run=requests,
        runs_per_boot=runs,
        boots_per_build=chosen,
        mde=mde,
        reaches_target=boots is not None,
        why=why,
    )


class Pilot(BaseModel):
    """Stage one of the two-stage rule: the pooled sd of boot means from the pilot boots of both sides."""

    boots: int  # pilot boots a side
    sd: float
    df: int


def pilot(a: np.ndarray, b: np.ndarray) -> Pilot:
    """Pooled sd of the pilot's boot means (log scale), equal boots a side (2 or more)."""
    if len(a) != len(b) or len(a) < MIN_BOOTS:
        raise ValueError(f"a pilot needs the same number of boots a side, 2 or more; got {len(a)} and {len(b)}")
    df = 2 * len(a) - 2
    pooled = (float(((a - a.mean()) ** 2).sum()) + float(((b - b.mean()) ** 2).sum())) / df
    return Pilot(boots=len(a), sd=math.sqrt(pooled), df=df)


def boots_needed(stage: Pilot, target_mde: float, max_boots: int) -> int:
    """Boots a side the rule asks for in total (>= the pilot's), from the pilot's sd alone, capped by the budget."""
    needed = boots_for(stage.sd**2, target_mde, max_boots, df=stage.df)
    return max(stage.boots, needed or max_boots)


def two_stage_estimate(a: np.ndarray, b: np.ndarray, stage: Pilot) -> Estimate:
    """The final interval: every boot's mean, the pilot's sd and degrees of freedom (exact under the model)."""
    if len(a) != len(b):
        raise ValueError(f"the two-stage interval needs the same boots a side, got {len(a)} and {len(b)}")
    boots = len(a)
    mean = float(b.mean() - a.mean())
    standard_error = stage.sd * math.sqrt(2 / boots)
    half = float(stats.t.ppf(1 - (1 - LEVEL) / 2, stage.df)) * standard_error
    return Estimate(
        change=math.expm1(mean),
        low=math.expm1(mean - half),
        high=math.expm1(mean + half),
        paired=False,
        n_a=boots,
        n_b=boots,
        mde=math.expm1(mde_factor(stage.df) * standard_error),
        unit="boot",
        df=float(stage.df),
    )


def target_note(estimate: Estimate, target_mde: float, max_units: int = 64) -> str:
    """compare --target-mde: this design's MDE, and the units (boots, or runs of one boot) a side to reach it."""
    shown = "not estimable" if estimate.mde is None else f"{estimate.mde:.1%}"
    unit = estimate.unit
    head = f"this design's MDE is {shown} over {estimate.n_a} + {estimate.n_b} {unit}s"
    if not estimate.claimable or unit == "prompt" or estimate.df is None or estimate.mde is None:
        short = estimate.unclaimable or "run"
        return f"{head}; the {short}-to-{short} spread is unknown with one {short} a side: measure two or more"
    if estimate.mde <= target_mde:
        return f"{head}: it reaches {target_mde:.1%}"
    # the variance of one unit this estimate implies, from its own standard error
    standard_error = math.log1p(estimate.mde) / mde_factor(estimate.df)
    variance = standard_error**2 / (1 / estimate.n_a + 1 / estimate.n_b)
    needed = boots_for(variance, target_mde, max_units)
    if needed is None:
        return f"{head}; {target_mde:.1%} is out of reach within {max_units} {unit}s a side"
    return f"{head}; to reach {target_mde:.1%} you need {needed} {unit}s a side"
