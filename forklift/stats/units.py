"""Units of replication: kept runs, grouped by the server boot that measured them, and their variance components.

A request's time is the sum of the prompt's own cost, per-request noise, the state of the box
during its run (run-to-run) and the state of the server process since it booted (boot-to-boot:
allocator layout, compiled graphs, clocks, where the weights landed). Requests of one run are
not independent draws and neither are runs of one boot: A and B of two builds are always two
boots, so the boot is then the unit. A unit's value is its mean log value over the prompts
every unit of the comparison measured, so prompt mix cancels.

Which boot a bench measured: the bench body's `boot_id` when recorded; else its boot facts' log
file (one per launch, when forklift launched the server); else unknown, and each receipt is
counted as a boot of its own (never two receipts pooled as one boot on a guess).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel
from scipy import stats

from forklift.stats.metrics import Metric
from forklift.stats.sample import BenchRun, kept_run_indexes


def boot_identity(run: BenchRun) -> tuple[str, bool]:
    """(boot id, whether the receipt recorded it): what tells this bench's server boot from another."""
    if run.body.boot_id:
        return run.body.boot_id, True
    log_path = (run.body.boot or {}).get("log_path")
    if log_path:
        return f"log:{log_path}", True
    return f"receipt:{run.receipt.id}", False


@dataclass(frozen=True)
class RunUnit:
    """One kept run of one cell: its boot, its order within that boot, and its log values by prompt."""

    boot: str
    position: int  # 0 = the first kept run of this cell measured on this boot
    values: dict[str, float]  # "prompt#occurrence" -> log value (ok requests with a positive value)


def run_units(runs: list[BenchRun], cell_name: str, metric: Metric) -> list[RunUnit]:
    """Every kept run of `cell_name` across the receipts of one side, oldest first."""
    units: list[RunUnit] = []
    seen_on_boot: dict[str, int] = {}
    for run in runs:
        cell = run.cell(cell_name)
        if cell is None:
            continue
        boot, _ = boot_identity(run)
        by_run: dict[int, dict[str, float]] = {index: {} for index in kept_run_indexes(cell)}
        occurrences: dict[tuple[int, str], int] = {}
        for record in cell.requests:
            values = by_run.get(record.run)
            if values is None:
                continue
            key = (record.run, record.prompt_id)
            occurrence = occurrences.get(key, 0)
            occurrences[key] = occurrence + 1
            value = metric.value(record) if record.ok else None
            if value is not None and value > 0:
                values[f"{record.prompt_id}#{occurrence}"] = math.log(value)
        for values in by_run.values():
            position = seen_on_boot.get(boot, 0)
            seen_on_boot[boot] = position + 1
            units.append(RunUnit(boot, position, values))
    return [unit for unit in units if unit.values]


def common_prompts(*sides: list[RunUnit]) -> set[str]:
    """Prompts every unit of every side measured (empty when none is shared)."""
    keys = [set(unit.values) for side in sides for unit in side]
    return set.intersection(*keys) if keys else set()


def unit_mean(unit: RunUnit, prompts: set[str]) -> float:
    """The unit's mean log value over `prompts` (all its prompts when the sides share none)."""
    chosen = [unit.values[p] for p in prompts] if prompts else list(unit.values.values())
    return float(np.mean(chosen))


def boot_means(units: list[RunUnit], prompts: set[str]) -> dict[str, float]:
    """Each boot's mean over its runs' unit means: the boot as one value."""
    grouped: dict[str, list[float]] = {}
    for unit in units:
        grouped.setdefault(unit.boot, []).append(unit_mean(unit, prompts))
    return {boot: float(np.mean(means)) for boot, means in grouped.items()}


class Components(BaseModel):
    """How one side's units vary: run to run within a boot, boot to boot, and a trend over runs in a boot.

    Standard deviations are of mean log values: read them as coefficients of variation (0.02 = 2 %).
    """

    runs: int
    boots: int
    run_cv: float | None = None  # within-boot sd of a run's mean (pooled over boots with 2+ runs)
    boot_cv: float | None = None  # sd of a boot's true level beyond its runs' noise (method of moments, >= 0)
    trend: float | None = None  # common slope of a run's mean over its order within a boot, per run
    trend_p: float | None = None  # two-sided p of that slope (t-test, boots as fixed effects)

    @property
    def drifting(self) -> bool:
        return self.trend_p is not None and self.trend_p < 0.05

    def summary(self) -> str:
        parts = [f"{self.runs} runs on {self.boots} boot{'s' if self.boots != 1 else ''}"]
        if self.run_cv is not None:
            parts.append(f"run-to-run {self.run_cv * 100:.1f}%")
        if self.boot_cv is not None:
            parts.append(f"boot-to-boot {self.boot_cv * 100:.1f}%")
        if self.trend is not None and self.trend_p is not None:
            flag = "TREND" if self.drifting else "trend"
            parts.append(f"{flag} {self.trend * 100:+.2f}% a run (p={self.trend_p:.2f})")
        return ", ".join(parts)


def components(units: list[RunUnit], prompts: set[str]) -> Components:
    grouped: dict[str, list[tuple[int, float]]] = {}
    for unit in units:
        grouped.setdefault(unit.boot, []).append((unit.position, unit_mean(unit, prompts)))
    result = Components(runs=len(units), boots=len(grouped))
    within = [np.array([m for _, m in runs]) for runs in grouped.values() if len(runs) >= 2]
    df_within = sum(len(w) - 1 for w in within)
    if df_within:
        result.run_cv = math.sqrt(sum(float(((w - w.mean()) ** 2).sum()) for w in within) / df_within)
    if len(grouped) >= 2:
        means = np.array([np.mean([m for _, m in runs]) for runs in grouped.values()])
        per_boot = np.mean([len(runs) for runs in grouped.values()])
        noise = (result.run_cv or 0.0) ** 2 / per_boot
        result.boot_cv = math.sqrt(max(0.0, float(means.var(ddof=1)) - noise))
    result.trend, result.trend_p = _trend(list(grouped.values()))
    return result


def _trend(boots: list[list[tuple[int, float]]]) -> tuple[float | None, float | None]:
    """The within-boot slope of a run's mean over its order (boots with 3+ runs), and its two-sided p."""
    xs, ys = [], []
    for runs in boots:
        if len(runs) < 3:
            continue
        x = np.array([p for p, _ in runs], dtype=float)
        y = np.array([m for _, m in runs])
        xs.append(x - x.mean())
        ys.append(y - y.mean())
    if not xs:
        return None, None
    x, y = np.concatenate(xs), np.concatenate(ys)
    df = len(x) - len(xs) - 1
    sxx = float((x**2).sum())
    slope = float((x * y).sum()) / sxx
    if df < 1:
        return slope, None
    residual = float(((y - slope * x) ** 2).sum()) / df
    if residual == 0:
        return slope, 0.0 if slope else 1.0
    t = slope / math.sqrt(residual / sxx)
    return slope, float(2 * stats.t.sf(abs(t), df))
