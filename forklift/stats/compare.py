"""Compare two groups of bench receipts (A the baseline, B the candidate) cell by cell, metric by metric.

Requests are paired by prompt id and kept-run ordinal (forklift.stats.sample).
A cell is compared paired when at least half of the smaller side's kept
requests found a partner; otherwise (different prompts, e.g. imported
archives or per-run synthetic ids) it falls back to an unpaired bootstrap
and says so. A verdict is a claim ("B faster by 4.1% (CI 1.2%..7.0%)")
only when the 95 % interval excludes zero and includes run-to-run variation of
the box (several kept runs a side, or an A/A floor); an interval over the
prompts of one run a side reports its effect as "not claimable". Otherwise
"within noise (+-Y%)" where Y is the interval's half-width.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel

from forklift.client.records import RequestRecord
from forklift.stats.control import aa_floor
from forklift.stats.divergence import Determinism, Divergence, determinism, divergence, is_greedy
from forklift.stats.guards import check_comparable, check_group
from forklift.stats.interval import Estimate, paired_change, unpaired_change, with_floor
from forklift.stats.metrics import METRICS, Metric
from forklift.stats.sample import BenchRun, Key, kept_requests, output_throughput, requests_by_text, server_tok_step

Claim = Literal["better", "worse", "different", "noise", "unclaimable", "insufficient"]

NOT_CLAIMABLE = "not claimable: one run a side (bench --runs 2 or more, or give compare an A/A control with --aa)"
# Unpaired cells (the sides sent different prompts) compare pooled requests: runs cannot be paired either.
NOT_CLAIMABLE_UNPAIRED = "not claimable: the sides sent different prompts, so no run-to-run floor (give --aa)"


class MetricResult(BaseModel):
    metric: str
    label: str
    unit: str
    a: float | None  # geometric mean over the values compared, in display units
    b: float | None
    estimate: Estimate | None
    claim: Claim
    verdict: str
    confounded: bool = False  # trajectory-sensitive metric and the texts diverged


class CellResult(BaseModel):
    cell: str
    concurrency: int
    paired: bool
    pairs: int
    requests_a: int
    requests_b: int
    failed_a: int
    failed_b: int
    bursts_a: int  # kept requests delivered in bursts: no decode timing (RequestRecord.delivered_in_burst)
    bursts_b: int
    throughput_a: float | None  # output tok/s of the cell
    throughput_b: float | None
    server_tok_step_a: float | None
    server_tok_step_b: float | None
    metrics: list[MetricResult]
    divergence: Divergence
    determinism_a: Determinism
    determinism_b: Determinism

    def metric(self, key: str) -> MetricResult | None:
        return next((m for m in self.metrics if m.metric == key), None)


class GroupComparison(BaseModel):
    """One row group: a setting (and workload) of A against its counterpart in B, on one box each."""

    setting_a: str
    setting_b: str
    workload: str
    label_a: str  # what was compared: build or user label, and the served model
    label_b: str
    build_a: str
    build_b: str
    host_a: str
    host_b: str
    across_machines: bool
    paths_a: list[str]
    paths_b: list[str]
    partial: list[str]  # receipts whose status is not ok
    cells: list[CellResult]
    only_a: list[str]  # cells measured on one side only
    only_b: list[str]
    aa: list[str] = []  # the A/A receipts whose spread floors the intervals


def _percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def verdict(metric: Metric, estimate: Estimate | None, n_a: int, n_b: int, paired: bool = True) -> tuple[Claim, str]:
    """The one-phrase judgement, in the metric's own words (faster/slower, higher/lower, longer/shorter)."""
    if estimate is None:
        counted = f"{n_a} pairs" if paired else f"A {n_a}, B {n_b} values"
        return "insufficient", f"too few values to judge ({counted}; need 2)"
    if not estimate.excludes_zero:
        return "noise", f"within noise (±{_percent(estimate.half_width)})"
    up = estimate.change > 0
    word = metric.up_word if up else metric.down_word
    low, high = sorted((abs(estimate.low), abs(estimate.high)))
    text = f"B {word} by {_percent(abs(estimate.change))} (CI {_percent(low)}..{_percent(high)})"
    if not estimate.claimable:
        return "unclaimable", f"{text}, {NOT_CLAIMABLE if estimate.paired else NOT_CLAIMABLE_UNPAIRED}"
    if metric.better is None:
        return "different", text
    better = up == (metric.better == "higher")
    return ("better" if better else "worse"), text


def _values(metric: Metric, records: list[RequestRecord]) -> list[float]:
    """Positive values only: a ratio needs them (a TPOT of 0, every token in one burst, cannot enter one)."""
    values = [metric.value(r) if r.ok else None for r in records]
    return [v for v in values if v is not None and v > 0]


def _geomean(values: np.ndarray, scale: float) -> float | None:
    return float(np.exp(np.log(values).mean()) * scale) if len(values) else None


def _runs(requests: dict[Key, RequestRecord]) -> int:
    return len({key[1] for key in requests})


def compare_metric(
    metric: Metric,
    a: dict[Key, RequestRecord],
    b: dict[Key, RequestRecord],
    paired: bool,
    seed: int,
    aa_runs: list[BenchRun] | None = None,
    cell_name: str = "",
) -> MetricResult | None:
    """None when neither side has the metric (e.g. tok/step without per-request speculation stats)."""
    all_a, all_b = _values(metric, list(a.values())), _values(metric, list(b.values()))
    if not (all_a or all_b):
        return None
    if paired:
        pairs = [
            (metric.value(a[key]), metric.value(b[key]), key[1])  # key[1]: the kept run it came from
            for key in sorted(a.keys() & b.keys())
            if a[key].ok and b[key].ok
        ]
        pairs = [(x, y, run) for x, y, run in pairs if x is not None and y is not None and x > 0 and y > 0]
        values_a, values_b = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
        runs = np.array([p[2] for p in pairs])
    else:
        values_a, values_b = np.array(all_a), np.array(all_b)
    estimate = None
    if min(len(values_a), len(values_b)) >= 2:
        estimate = (
            paired_change(values_a, values_b, runs=runs, seed=seed)
            if paired
            else unpaired_change(values_a, values_b, seed=seed)
        )
        floor = aa_floor(aa_runs, cell_name, metric) if aa_runs else None
        if floor is not None:
            estimate = with_floor(estimate, floor, _runs(a), _runs(b))
    claim, text = verdict(metric, estimate, len(values_a), len(values_b), paired)
    return MetricResult(
        metric=metric.key,
        label=metric.label,
        unit=metric.unit,
        a=_geomean(values_a, metric.scale),
        b=_geomean(values_b, metric.scale),
        estimate=estimate,
        claim=claim,
        verdict=text,
    )


def compare_cell(
    a_runs: list[BenchRun],
    b_runs: list[BenchRun],
    cell_name: str,
    *,
    seed: int = 0,
    aa_runs: list[BenchRun] | None = None,
) -> CellResult:
    a, b = kept_requests(a_runs, cell_name), kept_requests(b_runs, cell_name)
    pairs = len(a.keys() & b.keys())
    paired = pairs >= 2 and pairs >= min(len(a), len(b)) / 2
    texts_a, texts_b = requests_by_text(a_runs, cell_name), requests_by_text(b_runs, cell_name)
    drift = divergence(
        texts_a, texts_b, is_greedy(a_runs[0].body.workload.sampling), is_greedy(b_runs[0].body.workload.sampling)
    )
    metrics = []
    for metric in METRICS:
        result = compare_metric(metric, a, b, paired, seed, aa_runs, cell_name)
        if result is None:
            continue
        if metric.trajectory_sensitive and drift.diverged:
            result.confounded = True
            result.verdict += f"; confounded: {len(drift.diverged)} prompts diverged"
        metrics.append(result)
    cell = next(found for run in a_runs + b_runs if (found := run.cell(cell_name)) is not None)
    return CellResult(
        cell=cell_name,
        concurrency=cell.concurrency,
        paired=paired,
        pairs=pairs,
        requests_a=len(a),
        requests_b=len(b),
        failed_a=sum(not r.ok for r in a.values()),
        failed_b=sum(not r.ok for r in b.values()),
        bursts_a=sum(r.delivered_in_burst for r in a.values()),
        bursts_b=sum(r.delivered_in_burst for r in b.values()),
        throughput_a=output_throughput(a_runs, cell_name),
        throughput_b=output_throughput(b_runs, cell_name),
        server_tok_step_a=server_tok_step(a_runs, cell_name),
        server_tok_step_b=server_tok_step(b_runs, cell_name),
        metrics=metrics,
        divergence=drift,
        determinism_a=determinism(texts_a),
        determinism_b=determinism(texts_b),
    )


def _cell_names(runs: list[BenchRun]) -> list[str]:
    return list(dict.fromkeys(cell.name for run in runs for cell in run.body.cells))


def compare_groups(
    a_runs: list[BenchRun],
    b_runs: list[BenchRun],
    *,
    across_machines: bool = False,
    seed: int = 0,
    aa_runs: list[BenchRun] | None = None,
) -> GroupComparison:
    """Guard, then compare every cell both sides measured. Each side is one box: boxes are never pooled.

    `aa_runs`: an A/A control (benches of one build, same workload, on A's box) whose
    bench-to-bench spread floors every interval.
    """
    check_group(a_runs)
    check_group(b_runs)
    check_comparable(a_runs[0], b_runs[0], across_machines=across_machines)
    if aa_runs:
        check_group(aa_runs)
        check_comparable(a_runs[0], aa_runs[0])
    names_a, names_b = _cell_names(a_runs), _cell_names(b_runs)
    first_a, first_b = a_runs[0], b_runs[0]
    return GroupComparison(
        setting_a=first_a.setting,
        setting_b=first_b.setting,
        workload=first_a.body.workload.name,
        label_a=first_a.label,
        label_b=first_b.label,
        build_a=first_a.build,
        build_b=first_b.build,
        host_a=first_a.hostname,
        host_b=first_b.hostname,
        across_machines=first_a.machine_id != first_b.machine_id,
        paths_a=[str(r.path) for r in a_runs],
        paths_b=[str(r.path) for r in b_runs],
        partial=[f"{r.path} ({r.receipt.status})" for r in a_runs + b_runs if r.receipt.status != "ok"],
        cells=[compare_cell(a_runs, b_runs, name, seed=seed, aa_runs=aa_runs) for name in names_a if name in names_b],
        only_a=[name for name in names_a if name not in names_b],
        only_b=[name for name in names_b if name not in names_a],
        aa=[str(r.path) for r in aa_runs or []],
    )
