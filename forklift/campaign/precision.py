"""Precision on purpose: after the planned boots (the pilot), add whole repeats until a target MDE is in reach.

The rule is Stein's two-stage procedure (forklift.stats.design): the pilot's boots give a pooled sd of
boot means, the boots a side needed for the target MDE follow from that sd alone, and the campaign adds
them (whole repeats of its order, so every build keeps the interleaving) once, capped by the budget.
Deciding once from the pilot, never re-deciding as boots come in, is what keeps the false-claim rate at
5 %: stopping as soon as an interval looks narrow enough would select small sds and under-cover.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from forklift.errors import ConfigError
from forklift.stats.design import boots_needed, pilot
from forklift.stats.metrics import METRICS
from forklift.stats.sample import BenchRun
from forklift.stats.units import SideColumns, unit_tables

UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_budget(text: str, where: str) -> float:
    """'20m', '1200s', '1.5h' -> seconds; anything else is one line naming the key."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh])\s*", text)
    if not match or float(match.group(1)) <= 0:
        raise ConfigError(f"{where}: budget = {text!r}: give a positive time, e.g. '20m', '1200s' or '1.5h'")
    return float(match.group(1)) * UNITS[match.group(2)]


def parse_percent(text: str, where: str) -> float:
    """'1%' or '1' -> 0.01."""
    try:
        value = float(str(text).strip().removesuffix("%")) / 100
    except ValueError:
        raise ConfigError(f"{where}: {text!r}: give a percent, e.g. '1%'") from None
    if not 0 < value < 1:
        raise ConfigError(f"{where}: {text!r}: the target must lie between 0 and 100 percent")
    return value


@dataclass(frozen=True)
class Need:
    """What the pilot asks for, for one candidate build and cell."""

    build: str
    cell: str
    pilot_boots: int
    sd: float
    boots: int  # boots a side the rule asks for (at least the pilot's)

    def line(self, target: float) -> str:
        return (
            f"{self.build} / {self.cell}: pilot sd of boot means {self.sd:.2%} over {self.pilot_boots} boots a side "
            f"asks for {self.boots} boots a side to reach MDE {target:.2%}"
        )


@dataclass(frozen=True)
class Aim:
    """An MDE the pilot is held to: a suite's target_mde, or a ship gate's allowance."""

    target: float  # a fraction
    metric: str
    cells: list[str]
    label: str  # how the campaign names it when it says what the pilot asks for


def boots_wanted(
    runs: list[BenchRun], baseline: str, cells: list[str], metric_key: str, target: float, max_boots: int
) -> list[Need]:
    """Each candidate build and cell: the boots a side Stein's rule asks for, from the pilot's bench runs."""
    metric = next(m for m in METRICS if m.key == metric_key)
    builds = list(dict.fromkeys(run.build for run in runs))
    out = []
    for build in (b for b in builds if b != baseline):
        for cell in cells:
            side_a = SideColumns([r for r in runs if r.build == baseline], cell)
            side_b = SideColumns([r for r in runs if r.build == build], cell)
            (table_a, table_b), _ = unit_tables(metric, side_a, side_b)
            a, b = table_a.boot_means(), table_b.boot_means()
            pilot_boots = min(len(a), len(b))
            if pilot_boots < 2:
                continue  # no pilot sd yet: the design cannot be chosen from data
            stage = pilot(a[:pilot_boots], b[:pilot_boots])
            out.append(Need(build, cell, pilot_boots, stage.sd, boots_needed(stage, target, max_boots)))
    return out


def repeats_to_add(needed: int, boots_now: int, per_repeat: int, affordable: int) -> int:
    """Whole repeats that bring every build to `needed` boots a side, at most `affordable`."""
    if needed <= boots_now:
        return 0
    return min(affordable, math.ceil((needed - boots_now) / per_repeat))
