"""The A/A floor: how far units of one build on one box move from unit to unit.

Given receipts of the same build and workload (an A/A control), each boot is one unit when they
span two boots or more, else each kept run is. A unit's value is its mean log value over the
prompts every run measured, so prompt mix cancels and what is left is the state of the box (or
of the boot). Their spread is the floor an A/B difference must clear
(forklift.stats.interval.with_floor).
"""

from __future__ import annotations

from forklift.stats.interval import Floor, floor_from_units
from forklift.stats.metrics import Metric
from forklift.stats.units import Sides


def aa_floor(aa: Sides, metric: Metric) -> Floor | None:
    """The floor of one cell and metric from an A/A control (one side); None with fewer than two units of it."""
    [table], _ = aa.tables(metric)
    if len(set(table.boots)) >= 2:
        return floor_from_units(list(table.boot_means()), "boot")
    return floor_from_units(list(table.means), "run")
