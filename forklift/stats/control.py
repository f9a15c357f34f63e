"""The A/A floor: how far benches of one build on one box move from bench to bench.

Given receipts of the same build and workload (an A/A control: the same server
benched twice or more), each kept run is one unit. For a metric, a unit's value is
its mean log value over the prompts every unit measured, so prompt mix cancels and
what is left is the state of the box during that run. Their spread is the floor an
A/B difference must clear (forklift.stats.interval.with_floor).
"""

from __future__ import annotations

import numpy as np

from forklift.client.records import RequestRecord
from forklift.stats.interval import Floor, floor_from_units
from forklift.stats.metrics import Metric
from forklift.stats.sample import BenchRun, Key, kept_requests


def unit_means(requests: dict[Key, RequestRecord], metric: Metric) -> list[float]:
    """One mean log value per kept run, over the prompts every run measured (positive values only)."""
    by_unit: dict[int, dict[str, float]] = {}
    for (prompt, ordinal, occurrence), record in requests.items():
        value = metric.value(record) if record.ok else None
        if value is not None and value > 0:
            by_unit.setdefault(ordinal, {})[f"{prompt}#{occurrence}"] = float(np.log(value))
    if not by_unit:
        return []
    common = set.intersection(*(set(values) for values in by_unit.values()))
    if not common:
        return []
    return [float(np.mean([values[p] for p in sorted(common)])) for values in by_unit.values()]


def aa_floor(aa_runs: list[BenchRun], cell_name: str, metric: Metric) -> Floor | None:
    """The floor of one cell and metric from A/A receipts; None when they hold fewer than two runs of it."""
    return floor_from_units(unit_means(kept_requests(aa_runs, cell_name), metric))
