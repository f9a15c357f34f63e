"""The ship verdict of one metric: an interval judged against a practical margin, in words that match it.

The rule (the 95 % interval is the one shown, so the words can always be checked against it):

- "not claimable": the interval cannot contain the variation between the units A and B really are
  (one boot a side without an A/A across boots; one run a side of one boot without an A/A; too few values);
- "no practical change": the whole 95 % interval lies inside ±margin. This is an equivalence test
  (TOST) at 2.5 % a side: stricter than TOST's usual 90 % interval, and it is the interval on screen;
- "B slower" / "B faster" (or the metric's own words; "different" when it has no better side):
  the interval excludes zero and is not inside ±margin, so at least part of it is a change that matters;
- "undecided": the interval holds zero, is not inside ±margin, and the design's MDE exceeds the margin:
  it could not have told a margin-sized change from none;
- "within noise": the interval holds zero and the design could have seen a margin-sized change.

Before all but "too few values": a latency interval (TTFT, E2E) whose sides the host delivered unlike, one in
bursts and the other streamed (forklift.stats.bursts), is shown and read "undecided" with that reason: it
measures the host, not the build.

A false claim under no true change needs the interval to exclude zero: 5 % two-sided at most.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from forklift.errors import UsageError
from forklift.stats.interval import Estimate
from forklift.stats.metrics import METRICS, Metric

Kind = Literal["slower", "faster", "different", "no practical change", "within noise", "undecided", "not claimable"]
Unit = Literal["boot", "run", "prompt"]

DEFAULT_MARGIN = 0.01
CLAIMS: tuple[Kind, ...] = ("slower", "faster", "different")


class Verdict(BaseModel):
    """One metric of one cell, B against A: what the gate reads and what the reader sees."""

    metric: str
    kind: Kind
    worse: bool | None = None  # B worse than A, for a claim on a metric with a better side; else None
    change: float | None = None  # Δ as a fraction (0.03 = B 3 % higher)
    low: float | None = None  # the 95 % interval of Δ
    high: float | None = None
    margin: float = DEFAULT_MARGIN  # practical margin, a fraction: ±margin is "no change that matters"
    mde: float | None = None  # smallest |Δ| this design detects 80 % of the time at 5 %; None: not estimable
    unit: Unit = "prompt"  # what the interval counts as independent
    n_a: int = 0  # units a side
    n_b: int = 0
    df: float | None = None  # degrees of freedom of the interval's t quantile
    floored: bool = False  # an A/A control set (or widened) the interval
    unlike: str | None = None  # why the sides' latencies are not like for like (forklift.stats.bursts)
    words: str = ""

    @property
    def claimed(self) -> bool:
        return self.kind in CLAIMS


def percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def signed_percent(value: float) -> str:
    return f"{value * 100:+.1f}%"


def units_phrase(unit: Unit, n: int) -> str:
    """'2 boots', '1 run', '16 prompts'."""
    return f"{n} {unit}{'' if n == 1 else 's'}"


def sides_phrase(estimate: Estimate) -> str:
    """'3 boots a side', or 'A 2, B 3 boots'."""
    if estimate.n_a == estimate.n_b:
        return f"{units_phrase(estimate.unit, estimate.n_a)} a side"
    return f"A {estimate.n_a}, B {estimate.n_b} {estimate.unit}s"


def interval_phrase(estimate: Estimate) -> str:
    """The interval as the notes state it, from the estimate itself (so notes and verdict never disagree)."""
    sides = sides_phrase(estimate)
    if estimate.unit == "prompt":
        how = "paired bootstrap" if estimate.paired else "unpaired bootstrap"
        return f"interval: {how} over {sides.replace(' a side', '')} of one run a side"
    df = f" ({estimate.df:.1f} df)" if estimate.df is not None else ""
    if estimate.pooled is not None:
        return f"interval: Student's t over {sides}, boot-to-boot sd pooled over {estimate.pooled} builds{df}"
    floored = "; widened to the A/A floor" if estimate.widened else ""
    return f"interval: Welch's t over {sides}{df}{floored}"


def short_of(estimate: Estimate) -> str:
    """The verdict's few words on why an interval carries no claim ('one boot a side')."""
    if estimate.unclaimable == "boot":
        return "one boot a side"
    return "one run a side" if estimate.paired else "one run a side, different prompts"


def not_claimable_reason(estimate: Estimate) -> str:
    """Why an interval over too small a unit cannot carry a claim, and what would make it one."""
    if estimate.unclaimable == "boot":
        return (
            "one boot a side: runs of one boot cannot show boot-to-boot variation "
            "(2+ boots a side, or an A/A across boots of one build with --aa)"
        )
    if not estimate.paired:
        return "the sides sent different prompts in one run each: no run-to-run floor (give --aa)"
    return (
        "one run a side: an interval over prompts cannot see run-to-run variation "
        "(bench --runs 2 or more, or an A/A control with --aa)"
    )


def _span(estimate: Estimate) -> str:
    return f"CI {signed_percent(estimate.low)}..{signed_percent(estimate.high)}"


def judge(
    metric: Metric, estimate: Estimate | None, margin: float = DEFAULT_MARGIN, *, unlike: str | None = None
) -> Verdict:
    """The verdict of one estimate against a margin (a fraction), by the rule in this module's docstring.

    `unlike`: why the host delivered the sides unlike (forklift.stats.bursts.unlike_delivery), or None."""
    if estimate is None:
        return Verdict(metric=metric.key, kind="not claimable", margin=margin, words="too few values to judge (need 2)")
    base = Verdict(
        metric=metric.key,
        kind="not claimable",
        change=estimate.change,
        low=estimate.low,
        high=estimate.high,
        margin=margin,
        mde=estimate.mde,
        unit=estimate.unit,
        n_a=estimate.n_a,
        n_b=estimate.n_b,
        df=estimate.df,
        floored=estimate.floor is not None,
    )
    over = sides_phrase(estimate)
    shown = f"Δ {signed_percent(estimate.change)}, {_span(estimate)}, margin ±{percent(margin)}, {over}"
    if unlike is not None:
        return base.model_copy(
            update={"kind": "undecided", "unlike": unlike, "words": f"undecided: {unlike} ({shown})"}
        )
    if not estimate.claimable:
        return base.model_copy(update={"words": f"not claimable ({shown}): {short_of(estimate)}"})
    if -margin <= estimate.low and estimate.high <= margin:
        return base.model_copy(update={"kind": "no practical change", "words": f"no practical change ({shown})"})
    if estimate.excludes_zero:
        up = estimate.change > 0
        low, high = sorted((abs(estimate.low), abs(estimate.high)))
        words = (
            f"B {metric.up_word if up else metric.down_word} by {percent(abs(estimate.change))} "
            f"(CI {percent(low)}..{percent(high)}, margin ±{percent(margin)}, {over})"
        )
        if metric.better is None:
            return base.model_copy(update={"kind": "different", "words": words})
        better = up == (metric.better == "higher")
        return base.model_copy(update={"kind": "faster" if better else "slower", "worse": not better, "words": words})
    if estimate.mde is None or estimate.mde > margin:
        mde = "not estimable" if estimate.mde is None else percent(estimate.mde)
        words = f"undecided (MDE {mde} > margin ±{percent(margin)}; {shown})"
        return base.model_copy(update={"kind": "undecided", "words": words})
    return base.model_copy(update={"kind": "within noise", "words": f"within noise ({shown})"})


def parse_margin(text: str) -> tuple[str | None, float]:
    """'tpot=2%' -> ('tpot', 0.02); '2%' or '2' -> (None, 0.02): a margin for every metric. P is in percent."""
    key, _, value = text.rpartition("=")
    shown = value.strip().removesuffix("%")
    try:
        margin = float(shown) / 100
    except ValueError:
        raise UsageError(f"--margin {text!r}: not METRIC=P (P in percent, e.g. tpot=2%)") from None
    if not 0 < margin < 1:
        raise UsageError(f"--margin {text!r}: the margin must lie between 0 and 100 percent")
    known = [m.key for m in METRICS]
    if key and key not in known:
        raise UsageError(f"--margin {text!r}: unknown metric {key!r} (known: {', '.join(known)})")
    return key or None, margin


def margins(overrides: Mapping[str | None, float] | None = None, default: float = DEFAULT_MARGIN) -> dict[str, float]:
    """The margin of every metric: `default`, a None key's value for all, then per-metric overrides."""
    given = dict(overrides or {})
    every = given.pop(None, default)
    unknown = [key for key in given if key not in {m.key for m in METRICS}]
    if unknown:
        raise UsageError(f"margin for unknown metric {unknown[0]!r} (known: {', '.join(m.key for m in METRICS)})")
    return {m.key: given.get(m.key, every) for m in METRICS}


@dataclass(frozen=True)
class Margins:
    """The practical margins of a comparison: per metric key in every cell, then a cell's own per metric
    (a campaign's `margins` naming cells: a cell of 16 in flight on a power-capped GPU moves more than one of 1)."""

    metrics: Mapping[str, float] = field(default_factory=dict)
    cells: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def of(self, cell: str) -> dict[str, float]:
        return {**self.metrics, **self.cells.get(cell, {})}


class MarginRule(BaseModel):
    """One of a campaign's `margins`: a metric's practical margin, in every cell or in the cells named."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: str = Field(description="a compared metric: " + ", ".join(m.key for m in METRICS))
    within: float = Field(gt=0, lt=100, description="percent either way that is no change that matters")
    cells: list[str] | None = Field(default=None, min_length=1, description="bench cells (default: every cell)")

    @field_validator("within", mode="before")
    @classmethod
    def _percent(cls, value: object) -> object:
        return value.strip().removesuffix("%") if isinstance(value, str) else value

    @field_validator("metric")
    @classmethod
    def _known(cls, metric: str) -> str:
        known = [m.key for m in METRICS]
        if metric not in known:
            raise ValueError(f"unknown metric {metric!r} (known: {', '.join(known)})")
        return metric


def rule_margins(rules: list[MarginRule]) -> Margins:
    """The margins a campaign's rules give: a rule naming cells wins there over one for every cell."""
    every = {rule.metric: rule.within / 100 for rule in rules if rule.cells is None}
    cells: dict[str, dict[str, float]] = {}
    for rule in rules:
        for cell in rule.cells or []:
            cells.setdefault(cell, {})[rule.metric] = rule.within / 100
    return Margins(every, cells)
