"""Statistics over bench receipts: units of replication, intervals, verdicts against margins, planning.

Pure functions over receipts already read; no I/O.
"""

from forklift.stats.compare import (
    CellResult,
    GroupComparison,
    MetricResult,
    boot_values,
    compare_cell,
    compare_groups,
    compare_metric,
    judge_cell,
    unit_estimate,
)
from forklift.stats.interval import Estimate, minimum_detectable_effect, paired_change, unpaired_change, welch_change
from forklift.stats.matching import Matching, match
from forklift.stats.metrics import METRICS, Metric
from forklift.stats.sample import BenchRun, bench_runs
from forklift.stats.units import Components, boot_identity
from forklift.stats.verdict import (
    DEFAULT_MARGIN,
    Kind,
    MarginRule,
    Margins,
    Verdict,
    judge,
    margins,
    parse_margin,
    rule_margins,
)

__all__ = [
    "DEFAULT_MARGIN",
    "METRICS",
    "BenchRun",
    "CellResult",
    "Components",
    "Estimate",
    "GroupComparison",
    "Kind",
    "MarginRule",
    "Margins",
    "Matching",
    "Metric",
    "MetricResult",
    "Verdict",
    "bench_runs",
    "boot_identity",
    "boot_values",
    "compare_cell",
    "compare_groups",
    "compare_metric",
    "judge",
    "judge_cell",
    "margins",
    "match",
    "minimum_detectable_effect",
    "paired_change",
    "parse_margin",
    "rule_margins",
    "unit_estimate",
    "unpaired_change",
    "welch_change",
]
