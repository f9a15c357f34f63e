"""Compare two groups of bench receipts (A the baseline, B the candidate) cell by cell, metric by metric.

Each metric's interval is over the unit A and B really are (forklift.stats.units): the run when
both sides ran on one server boot, the boot otherwise (two builds are always two boots). A unit is
its mean log value over the prompts every unit measured, so the pairing by prompt survives and
prompt mix cancels. With fewer than two units a side the finer interval (runs of one boot, or
prompts of one run) is shown and marked "not claimable" unless an A/A control of the missing unit
floors it. The verdict judges that interval against a practical margin (forklift.stats.verdict).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel

from forklift.stats.bursts import unlike_delivery
from forklift.stats.control import aa_floor
from forklift.stats.divergence import Determinism, Divergence, TextCodes, determinism, divergence, is_greedy
from forklift.stats.gpustate import cell_gpu_runs, gpu_flags
from forklift.stats.guards import check_comparable, check_group
from forklift.stats.interval import Estimate, paired_change, pooled_change, unpaired_change, welch_change, with_floor
from forklift.stats.metrics import METRICS, Metric
from forklift.stats.sample import (
    BenchRun,
    TtftSplit,
    give_back_freed,
    output_throughput,
    server_tok_step,
    server_ttft_split,
    text_hashes,
)
from forklift.stats.units import Components, SideColumns, Sides, components
from forklift.stats.verdict import DEFAULT_MARGIN, Kind, Margins, Verdict, judge


class MetricResult(BaseModel):
    metric: str
    label: str
    unit: str
    a: float | None  # geometric mean over the values compared, in display units
    b: float | None
    estimate: Estimate | None  # the interval shown; `decision` judges exactly this one
    decision: Verdict
    components_a: Components | None = None  # how A's units vary (runs, boots, trend)
    components_b: Components | None = None
    confounded: bool = False  # trajectory-sensitive metric and the texts diverged

    @property
    def claim(self) -> Kind:
        return self.decision.kind

    @property
    def verdict(self) -> str:
        return self.decision.words


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
    gpu_flags_a: list[str] = []  # throttling most kept runs shared, runs unlike it or at another clock (stats.gpustate)
    gpu_flags_b: list[str] = []
    server_ttft_a: TtftSplit | None = None  # the engine's TTFT and its queue and prefill (vLLM's histograms)
    server_ttft_b: TtftSplit | None = None

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


def _geomean(logs: np.ndarray, scale: float) -> float | None:
    finite = logs[~np.isnan(logs)]
    return float(np.exp(finite.mean()) * scale) if len(finite) else None


def _prompt_estimate(a: np.ndarray, b: np.ndarray, paired: bool, seed: int) -> Estimate | None:
    """The interval over prompts, from (units, prompts) log matrices: shown, never claimed on its own.

    Paired: unit k of A meets unit k of B, prompt by prompt (the k-th kept run on each side).
    """
    if paired:
        both = min(len(a), len(b))
        x, y = a[:both].ravel(), b[:both].ravel()
        kept = ~(np.isnan(x) | np.isnan(y))
        if kept.sum() < 2:
            return None
        return paired_change(np.exp(x[kept]), np.exp(y[kept]), seed=seed)
    x, y = a[~np.isnan(a)], b[~np.isnan(b)]
    if min(len(x), len(y)) < 2:
        return None
    return unpaired_change(np.exp(x), np.exp(y), seed=seed)


def unit_estimate(
    metric: Metric,
    sides: Sides,
    *,
    paired: bool = True,
    seed: int = 0,
    aa: Sides | None = None,
) -> tuple[Estimate | None, Components, Components]:
    """The interval of B vs A over the right unit, floored by an A/A control, and each side's components.

    The unit is the run when every unit of both sides ran on one boot, else the boot (forklift.stats.units).
    Sides beyond A and B are the campaign's other builds, measured in the same cell: their boots join the
    pooled boot-to-boot sd (forklift.stats.interval.pooled_change), which then replaces the A/A floor (the
    control's boots are A's own, already in the pool). Short of two units a side, the finer interval is
    shown marked with the unit it lacks.
    """
    tables, matrices = sides.tables(metric)
    (table_a, table_b), (matrix_a, matrix_b), pool = tables[:2], matrices[:2], tables[2:]
    comps = components(table_a), components(table_b)
    level: Literal["run", "boot"] = "run" if len(set(table_a.boots) | set(table_b.boots)) == 1 else "boot"
    estimate = None
    if level == "run":
        estimate = welch_change(table_a.means, table_b.means, "run")
    elif pool:
        estimate = pooled_change(table_a.boot_means(), table_b.boot_means(), [t.boot_means() for t in pool])
    if level == "boot" and estimate is None:
        estimate = welch_change(table_a.boot_means(), table_b.boot_means(), "boot")
        if estimate is None:
            estimate = welch_change(table_a.means, table_b.means, "run")
    if estimate is None:
        estimate = _prompt_estimate(matrix_a, matrix_b, paired, seed)
    if estimate is not None and estimate.unit != level:
        estimate = estimate.model_copy(update={"unclaimable": level})
    floor = aa_floor(aa, metric) if aa is not None and (estimate is None or estimate.pooled is None) else None
    if estimate is not None and floor is not None:
        n_a, n_b = (comps[0].boots, comps[1].boots) if floor.unit == "boot" else (comps[0].runs, comps[1].runs)
        estimate = with_floor(estimate, floor, n_a, n_b)
    return estimate, comps[0], comps[1]


def compare_metric(
    metric: Metric,
    sides: Sides,
    *,
    paired: bool = True,
    seed: int = 0,
    aa: Sides | None = None,
    margin: float = DEFAULT_MARGIN,
) -> MetricResult | None:
    """None when neither side has the metric (e.g. tok/step without per-request speculation stats).

    A latency metric of sides the host delivered unlike (one in bursts: forklift.stats.bursts) reads undecided."""
    a, b = sides.sides[:2]
    logs_a, logs_b = a.log_values(metric), b.log_values(metric)
    if np.isnan(logs_a).all() and np.isnan(logs_b).all():
        return None
    estimate, comps_a, comps_b = unit_estimate(metric, sides, paired=paired, seed=seed, aa=aa)
    unlike = (
        unlike_delivery(int(a.bursts.sum()), a.rows, int(b.bursts.sum()), b.rows) if metric.delivery_timed else None
    )
    return MetricResult(
        metric=metric.key,
        label=metric.label,
        unit=metric.unit,
        a=_geomean(logs_a, metric.scale),
        b=_geomean(logs_b, metric.scale),
        estimate=estimate,
        decision=judge(metric, estimate, margin, unlike=unlike),
        components_a=comps_a,
        components_b=comps_b,
    )


def pairing(sides: Sides) -> tuple[int, bool]:
    """Requests of A with a partner in B (same prompt, same kept-run ordinal), and whether that is enough to pair:
    at least half of the smaller side's kept requests (else the prompts differ and the sides are unpaired)."""
    a, b = sides.sides[:2]
    pairs = sides.shared_rows()
    return pairs, pairs >= 2 and pairs >= min(a.rows, b.rows) / 2


def compare_cell(
    a_runs: list[BenchRun],
    b_runs: list[BenchRun],
    cell_name: str,
    *,
    seed: int = 0,
    aa_runs: list[BenchRun] | None = None,
    margins: dict[str, float] | None = None,
    pool_runs: list[list[BenchRun]] | None = None,
) -> CellResult:
    """`margins`: the practical margin of each metric key (a fraction; DEFAULT_MARGIN for any not given).
    `pool_runs`: each further build's runs of this cell, whose boots join the pooled boot-to-boot sd."""
    a, b = SideColumns(a_runs, cell_name), SideColumns(b_runs, cell_name)
    pool = [side for runs in pool_runs or [] if (side := SideColumns(runs, cell_name)).rows]
    sides = Sides(a, b, *pool)
    aa = Sides(SideColumns(aa_runs, cell_name)) if aa_runs else None
    pairs, paired = pairing(sides)
    codes = TextCodes()
    give_back_freed()  # each step's temporaries, a million rows a side: tens of MB of heap that stays resident
    texts_a, texts_b = text_hashes(a_runs, cell_name, codes), text_hashes(b_runs, cell_name, codes)
    give_back_freed()
    greedy = [is_greedy(runs[0].body.workload.sampling) for runs in (a_runs, b_runs)]
    drift = divergence(texts_a, texts_b, codes, *greedy)
    metrics = []
    for metric in METRICS:
        margin = (margins or {}).get(metric.key, DEFAULT_MARGIN)
        result = compare_metric(metric, sides, paired=paired, seed=seed, aa=aa, margin=margin)
        if result is None:
            continue
        if metric.trajectory_sensitive and drift.diverged:
            result.confounded = True
            words = f"{result.decision.words}; confounded: {len(drift.diverged)} prompts diverged"
            result.decision = result.decision.model_copy(update={"words": words})
        metrics.append(result)
    cell = next(found for run in a_runs + b_runs if (found := run.cell(cell_name)) is not None)
    return CellResult(
        cell=cell_name,
        concurrency=cell.concurrency,
        paired=paired,
        pairs=pairs,
        requests_a=a.rows,
        requests_b=b.rows,
        failed_a=int((~a.ok).sum()),
        failed_b=int((~b.ok).sum()),
        bursts_a=int(a.bursts.sum()),
        bursts_b=int(b.bursts.sum()),
        throughput_a=output_throughput(a_runs, cell_name),
        throughput_b=output_throughput(b_runs, cell_name),
        server_tok_step_a=server_tok_step(a_runs, cell_name),
        server_tok_step_b=server_tok_step(b_runs, cell_name),
        metrics=metrics,
        divergence=drift,
        determinism_a=determinism(texts_a, codes),
        determinism_b=determinism(texts_b, codes),
        gpu_flags_a=gpu_flags(cell_gpu_runs(a_runs, cell_name)),
        gpu_flags_b=gpu_flags(cell_gpu_runs(b_runs, cell_name)),
        server_ttft_a=server_ttft_split(a_runs, cell_name),
        server_ttft_b=server_ttft_split(b_runs, cell_name),
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
    margins: Margins | None = None,
    pool_runs: list[list[BenchRun]] | None = None,
) -> GroupComparison:
    """Guard, then compare every cell both sides measured. Each side is one box: boxes are never pooled.

    `aa_runs`: an A/A control (benches of one build, same workload, on A's box) whose
    boot-to-boot (or, on one boot, run-to-run) spread floors every interval. `margins`: per metric, per cell.
    `pool_runs`: the campaign's other builds on this box, setting and workload, one list each: their
    boots join A's and B's in the pooled boot-to-boot sd.
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
        cells=[
            compare_cell(
                a_runs,
                b_runs,
                name,
                seed=seed,
                aa_runs=aa_runs,
                margins=(margins or Margins()).of(name),
                pool_runs=pool_runs,
            )
            for name in names_a
            if name in names_b
        ],
        only_a=[name for name in names_a if name not in names_b],
        only_b=[name for name in names_b if name not in names_a],
        aa=[str(r.path) for r in aa_runs or []],
    )


def metric_by_key(key: str) -> Metric:
    found = next((m for m in METRICS if m.key == key), None)
    if found is None:
        raise ValueError(f"unknown metric {key!r} (known: {', '.join(m.key for m in METRICS)})")
    return found


def judge_cell(
    a_runs: list[BenchRun],
    b_runs: list[BenchRun],
    cell_name: str,
    metric_key: str,
    *,
    margin: float = DEFAULT_MARGIN,
    aa_runs: list[BenchRun] | None = None,
    seed: int = 0,
) -> Verdict:
    """The verdict of one cell and metric, B against A, against `margin` (a fraction): a gate's one call.

    The same computation as compare_groups' for that cell (no guards: the caller chose the sides).
    """
    metric = metric_by_key(metric_key)
    a, b = SideColumns(a_runs, cell_name), SideColumns(b_runs, cell_name)
    aa = Sides(SideColumns(aa_runs, cell_name)) if aa_runs else None
    sides = Sides(a, b)
    result = compare_metric(metric, sides, paired=pairing(sides)[1], seed=seed, aa=aa, margin=margin)
    return result.decision if result is not None else judge(metric, None, margin)


def boot_values(
    a_runs: list[BenchRun], b_runs: list[BenchRun], cell_name: str, metric_key: str
) -> tuple[np.ndarray, np.ndarray]:
    """Each side's boot means (mean log value over the prompts every unit measured), for the two-stage rule.

    forklift.stats.design: `pilot(*boot_values(...))` on the pilot boots, `boots_needed`, then
    `two_stage_estimate(*boot_values(...), stage)` on every boot, judged with `judge`.
    """
    metric = metric_by_key(metric_key)
    (table_a, table_b), _ = Sides(SideColumns(a_runs, cell_name), SideColumns(b_runs, cell_name)).tables(metric)
    return table_a.boot_means(), table_b.boot_means()
