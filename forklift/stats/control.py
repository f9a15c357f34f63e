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
from forklift.stats.sample import BenchRun
from forklift.stats.units import boot_means, common_prompts, run_units, unit_mean


def aa_floor(aa_runs: list[BenchRun], cell_name: str, metric: Metric) -> Floor | None:
    """The floor of one cell and metric from A/A receipts; None when they hold fewer than two units of it."""
    units = run_units(aa_runs, cell_name, metric)
    prompts = common_prompts(units)
    if not prompts:
        return None
    if len({unit.boot for unit in units}) >= 2:
        return floor_from_units(list(boot_means(units, prompts).values()), "boot")
    return floor_from_units([unit_mean(unit, prompts) for unit in units], "run")
