"""Statistics over bench receipts: paired per-prompt comparison, bootstrap intervals, divergence, verdicts.

Pure functions over receipts already read; no I/O.
"""

from forklift.stats.compare import CellResult, GroupComparison, MetricResult, compare_cell, compare_groups, verdict
from forklift.stats.interval import Estimate, minimum_detectable_effect, paired_change, unpaired_change
from forklift.stats.matching import Matching, match
from forklift.stats.metrics import METRICS, Metric
from forklift.stats.sample import BenchRun, bench_runs

__all__ = [
    "METRICS",
    "BenchRun",
    "CellResult",
    "Estimate",
    "GroupComparison",
    "Matching",
    "Metric",
    "MetricResult",
    "bench_runs",
    "compare_cell",
    "compare_groups",
    "match",
    "minimum_detectable_effect",
    "paired_change",
    "unpaired_change",
    "verdict",
]
