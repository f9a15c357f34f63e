"""Relative change of B against A with a seeded bootstrap interval and the minimum detectable effect.

Everything is computed on log ratios, log(b / a), and shown as a relative
change, exp(mean log ratio) - 1 (the geometric mean of the per-prompt
ratios). Log ratios rather than raw relative deltas (b - a) / a because:
swapping A and B flips the sign exactly; pure noise has no bias (the mean
of b / a - 1 over noisy a is inflated by about CV^2, enough to turn noise
into false "wins"); and a multiplicative effect ("10 % slower on every
prompt") becomes one additive shift whatever the prompt's length.

Interval: a percentile bootstrap of the mean (scipy.stats.bootstrap, seeded)
at the *expanded* level of Hesterberg (2015, "What teachers should know about
the bootstrap", section 5): the plain percentile interval is too narrow for
small samples (it uses the divide-by-n spread and normal tails), so the
level is raised until its normal quantile equals sqrt(n / (n - 1)) times
Student's t quantile. For the 8-prompt cohorts maintainers actually run,
this is the difference between a 95 % interval and an 88 % one.

Paired (the same prompt on both sides), one kept run a side: bootstrap over
prompts of the mean log ratio. Several kept runs a side: requests of one run
share that run's state of the box, so the run is the unit; each run's mean log
ratio is one value and the interval is Student's t over them (a bootstrap of
four values cannot reach its own tails, and named a winner for pure drift in
one trial of eight). The MDE always uses the interval's own standard error and
degrees of freedom, so the two never tell different stories. Unpaired (no
shared prompt ids): each side is resampled on its own and the statistic is
mean(log b) - mean(log a).

The A/A floor (`Floor`): benches of one build on one box, measured as the
same workload, give the spread of a bench's mean log value from bench to bench
(sd over N units, N - 1 degrees of freedom). A one-run-a-side interval over
prompts cannot see that spread; with a floor the interval is widened to at
least t(N - 1) x sd x sqrt(1/R_a + 1/R_b), R the runs a side.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel
from scipy import stats

LEVEL = 0.95
POWER = 0.80
RESAMPLES = 9999
# Above this many values a percentile bootstrap of a mean is Student's t to the digits shown, at
# resamples x values the cost: the t interval is used instead.
BOOTSTRAP_MAX = 20_000


class Estimate(BaseModel):
    """B relative to A: change and interval as fractions (0.05 = B is 5 % higher)."""

    change: float
    low: float
    high: float
    paired: bool
    n_a: int
    n_b: int
    mde: float | None = None  # smallest |change| this sample detects with 80 % power; None: too few units
    unit: Literal["prompt", "run", "boot"] = "prompt"  # what the interval treats as independent
    df: float | None = None  # degrees of freedom of the interval's t quantile (None: a bootstrap)
    floor: float | None = None  # half-width (as a fraction) the A/A floor imposes, when one was given
    widened: bool = False  # the floor was wider than the estimate's own interval
    unclaimable: Literal["prompt", "run", "boot"] | None = None  # the unit the interval is short of, if any
    pooled: int | None = None  # builds whose boot-to-boot spread the interval pools (pooled_change), if any

    @property
    def claimable(self) -> bool:
        """The variation between the units A and B really are is inside the interval."""
        return self.unclaimable is None

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def expanded_level(n: int, level: float = LEVEL) -> float:
    """Hesterberg's expanded percentile level: z' = sqrt(n/(n-1)) * t_{1-a/2, n-1}, level' = 2 Phi(z') - 1."""
    t_quantile = stats.t.ppf(1 - (1 - level) / 2, n - 1)
    z_expanded = math.sqrt(n / (n - 1)) * t_quantile
    return float(1 - 2 * stats.norm.sf(z_expanded))


def minimum_detectable_effect(standard_error: float, df: float, level: float = LEVEL, power: float = POWER) -> float:
    """Smallest true change (as a fraction) a two-sided test at 1 - level detects with the given power.

    MDE = (t_{1-alpha/2, df} + t_{power, df}) * SE of the mean log ratio, then
    exp(.) - 1. For large samples the factor is 1.96 + 0.84 = 2.80. We quote the
    80 %-power effect rather than the interval's half-width because the reader's
    question is "could this cohort have caught a regression of size X?": an
    effect equal to the half-width is caught only half the time.
    """
    factor = stats.t.ppf(1 - (1 - level) / 2, df) + stats.t.ppf(power, df)
    return float(math.expm1(factor * standard_error))


def _interval(low_log: float, high_log: float) -> tuple[float, float]:
    return math.expm1(low_log), math.expm1(high_log)


def _estimate(mean_log: float, low_log: float, high_log: float, **fields: Any) -> Estimate:
    """An estimate from its centre and interval on the log scale, shown as relative changes; `fields` the rest."""
    low, high = _interval(low_log, high_log)
    return Estimate(change=math.expm1(mean_log), low=low, high=high, **fields)


class Floor(BaseModel):
    """Unit-to-unit spread of one build on one box, from N same-build units (an A/A measurement)."""

    units: int
    sd: float  # standard deviation of a unit's mean log value
    unit: Literal["run", "boot"] = "run"  # what one of its units is

    def half_width_log(self, n_a: int, n_b: int, level: float = LEVEL) -> float:
        return float(stats.t.ppf(1 - (1 - level) / 2, self.units - 1)) * self.standard_error(n_a, n_b)

    def standard_error(self, n_a: int, n_b: int) -> float:
        return self.sd * math.sqrt(1 / n_a + 1 / n_b)


def floor_from_units(unit_means: list[float], unit: Literal["run", "boot"] = "run") -> Floor | None:
    """The floor from each A/A unit's mean log value (None with fewer than two units)."""
    if len(unit_means) < 2:
        return None
    return Floor(units=len(unit_means), sd=float(np.std(unit_means, ddof=1)), unit=unit)


UNIT_RANK = {"prompt": 0, "run": 1, "boot": 2}


def with_floor(estimate: Estimate, floor: Floor, n_a: int, n_b: int) -> Estimate:
    """The estimate with its interval widened to at least the floor's (centre kept), and its MDE to match.

    `n_a`, `n_b`: units of the floor's kind a side. A floor whose unit is at least the one the
    estimate is short of makes it claimable: its spread holds the variation the estimate could not see
    (a boot-to-boot spread holds run-to-run variation too).
    """
    centre = math.log1p(estimate.change)
    own = (math.log1p(estimate.high) - math.log1p(estimate.low)) / 2
    half = floor.half_width_log(n_a, n_b)
    floor_mde = minimum_detectable_effect(floor.standard_error(n_a, n_b), floor.units - 1)
    mde = floor_mde if estimate.mde is None else max(estimate.mde, floor_mde)
    update: dict[str, Any] = {"floor": math.expm1(half), "mde": mde}
    short = estimate.unclaimable
    if short is not None and UNIT_RANK[floor.unit] >= UNIT_RANK[short]:
        update["unclaimable"] = None
    if half > own:
        low, high = _interval(centre - half, centre + half)
        update |= {"low": low, "high": high, "widened": True, "df": floor.units - 1.0}
    return estimate.model_copy(update=update)


def _t_estimate(mean: float, standard_error: float, df: float, **fields: Any) -> Estimate:
    """Student's t interval of two independent sides' difference on the log scale, with its MDE."""
    half = float(stats.t.ppf(1 - (1 - LEVEL) / 2, df)) * standard_error
    mde = minimum_detectable_effect(standard_error, df)
    return _estimate(mean, mean - half, mean + half, paired=False, mde=mde, df=df, **fields)


def welch_change(a: np.ndarray, b: np.ndarray, unit: Literal["run", "boot"]) -> Estimate | None:
    """B vs A over independent units (each a mean log value): Welch's t; None unless 2+ units a side.

    A unit's value is the mean log of a metric over the prompts every unit measured, so prompt
    mix cancels and each unit is the state of the box (or of the boot) while it ran.
    """
    n_a, n_b = len(a), len(b)
    if min(n_a, n_b) < 2:
        return None
    mean = float(b.mean() - a.mean())
    var_a, var_b = float(a.var(ddof=1)) / n_a, float(b.var(ddof=1)) / n_b
    standard_error = math.sqrt(var_a + var_b)
    if standard_error == 0:
        df = float(n_a + n_b - 2)
    else:  # Welch-Satterthwaite
        df = (var_a + var_b) ** 2 / (var_a**2 / (n_a - 1) + var_b**2 / (n_b - 1))
    return _t_estimate(mean, standard_error, df, n_a=n_a, n_b=n_b, unit=unit)


def pooled_change(a: np.ndarray, b: np.ndarray, others: list[np.ndarray]) -> Estimate | None:
    """B vs A over boots, the boot-to-boot sd pooled over every build of the campaign; None unless 2+ builds
    have 2+ boots.

    Builds differ in their level, not in how one boot of them differs from the next (the same box
    and engine boot each): the within-build spreads of A, B and the `others` (every further build
    measured in the same cells) estimate one sd with sum(n - 1) degrees of freedom. Two boots of each
    of three builds give 3 df where Welch's t over A and B alone has about 1 (t 3.18 against 12.7).
    Drift over the campaign inflates the within-build spread, never hides it: the interval errs wide.
    One build's spread alone is not pooled: it cannot show that builds share one sd, and a build that
    changes how the box paces its answers (a slower step delivers tokens one by one where a loaded box
    sends them in bursts) has a spread of its own; seen on a 2-core box, where one build's 2 boots gave
    A vs an identical build Δ -22.6% (CI -29.3..-15.3%) from one boot a side.
    """
    groups = [g for g in (a, b, *others) if len(g)]
    if not (len(a) and len(b)) or sum(len(g) >= 2 for g in groups) < 2:
        return None
    df = sum(len(g) - 1 for g in groups)
    variance = sum(float(((g - g.mean()) ** 2).sum()) for g in groups) / df
    standard_error = math.sqrt(variance * (1 / len(a) + 1 / len(b)))
    mean = float(b.mean() - a.mean())
    return _t_estimate(mean, standard_error, float(df), n_a=len(a), n_b=len(b), unit="boot", pooled=len(groups))


def _bootstrap(
    samples: tuple[np.ndarray, ...], statistic: Callable[..., Any], n: int, *, seed: int, resamples: int
) -> tuple[float, float]:
    """The seeded percentile bootstrap interval of `statistic` over `samples`, at the expanded level for `n` units."""
    result = stats.bootstrap(
        samples,
        statistic,
        method="percentile",
        n_resamples=resamples,
        confidence_level=expanded_level(n),
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _mean_difference(a: np.ndarray, b: np.ndarray, axis: int) -> np.ndarray:
    """mean(b) - mean(a), vectorised over resamples as scipy.stats.bootstrap calls it."""
    shift: np.ndarray = np.mean(b, axis=axis) - np.mean(a, axis=axis)
    return shift


def paired_change(a: np.ndarray, b: np.ndarray, *, seed: int = 0, resamples: int = RESAMPLES) -> Estimate:
    """B vs A where a[i] and b[i] are the same prompt in one run a side; values must be positive.

    Requests of one run share that run's state of the box (load, caches, clocks): this interval
    over prompts cannot see run-to-run variation, so it carries no claim on its own.
    """
    units = np.log(np.asarray(b, dtype=float)) - np.log(np.asarray(a, dtype=float))
    n = len(units)
    if n < 2:
        raise ValueError(f"a paired interval needs at least 2 pairs, got {n}")
    mean = float(units.mean())
    standard_error = float(units.std(ddof=1)) / math.sqrt(n)
    if np.all(units == units[0]):  # no spread: the bootstrap distribution is a point
        low_log = high_log = mean
    elif n > BOOTSTRAP_MAX:
        half = float(stats.t.ppf(1 - (1 - LEVEL) / 2, n - 1)) * standard_error
        low_log, high_log = mean - half, mean + half
    else:
        low_log, high_log = _bootstrap((units,), np.mean, n, seed=seed, resamples=resamples)
    return _estimate(
        mean,
        low_log,
        high_log,
        paired=True,
        n_a=n,
        n_b=n,
        mde=minimum_detectable_effect(standard_error, n - 1),
        unclaimable="run",
    )


def unpaired_change(a: np.ndarray, b: np.ndarray, *, seed: int = 0, resamples: int = RESAMPLES) -> Estimate:
    """B vs A from two independent samples (no shared prompts): ratio of geometric means.

    The expansion uses the smaller sample's size, which errs on the wide side.
    """
    log_a, log_b = np.log(np.asarray(a, dtype=float)), np.log(np.asarray(b, dtype=float))
    n_a, n_b = len(log_a), len(log_b)
    if min(n_a, n_b) < 2:
        raise ValueError(f"an unpaired interval needs at least 2 values per side, got {n_a} and {n_b}")
    mean = float(log_b.mean() - log_a.mean())
    var_a, var_b = float(log_a.var(ddof=1)) / n_a, float(log_b.var(ddof=1)) / n_b
    if var_a + var_b == 0:
        low_log = high_log = mean
        df = float(min(n_a, n_b) - 1)
    else:
        # Welch-Satterthwaite degrees of freedom for the MDE's t quantiles
        df = (var_a + var_b) ** 2 / (var_a**2 / (n_a - 1) + var_b**2 / (n_b - 1))
        if n_a + n_b > BOOTSTRAP_MAX:
            half = float(stats.t.ppf(1 - (1 - LEVEL) / 2, df)) * math.sqrt(var_a + var_b)
            low_log, high_log = mean - half, mean + half
        else:
            low_log, high_log = _bootstrap(
                (log_a, log_b), _mean_difference, min(n_a, n_b), seed=seed, resamples=resamples
            )
    return _estimate(
        mean,
        low_log,
        high_log,
        paired=False,
        n_a=n_a,
        n_b=n_b,
        mde=minimum_detectable_effect(math.sqrt(var_a + var_b), df),
        unclaimable="run",
    )
