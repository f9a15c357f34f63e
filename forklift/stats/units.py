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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel
from scipy import stats

from forklift.stats.metrics import Metric
from forklift.stats.requests import RequestColumns
from forklift.stats.sample import BenchRun


def boot_identity(run: BenchRun) -> tuple[str, bool]:
    """(boot id, whether the receipt recorded it): what tells this bench's server boot from another."""
    if run.body.boot_id:
        return run.body.boot_id, True
    log_path = (run.body.boot or {}).get("log_path")
    if log_path:
        return f"log:{log_path}", True
    return f"receipt:{run.receipt.id}", False


class SideColumns:
    """One side's kept requests of one cell as columns, read once: what every metric's units are built from.

    Row i is one kept request: its unit (kept run) and its prompt key (prompt id, occurrence: the n-th time
    that prompt was sent in that run). A metric's values are read from the requests' columns once and kept
    as an array (NaN: no value) until the next metric's are read.
    """

    def __init__(self, runs: list[BenchRun], cell_name: str) -> None:
        self.parts: list[tuple[RequestColumns, np.ndarray]] = []  # each receipt's columns and its kept rows
        units: list[np.ndarray] = []
        prompts: list[np.ndarray] = []
        occurrences: list[np.ndarray] = []
        codes: dict[str, int] = {}
        self.unit_boots: list[str] = []
        self.unit_positions: list[int] = []
        seen_on_boot: dict[str, int] = {}
        for run in runs:
            columns = run.requests(cell_name)
            if columns is None:
                continue
            boot, _ = boot_identity(run)
            first = len(self.unit_boots)
            kept = run.kept_runs(cell_name)
            for _ in kept:
                position = seen_on_boot.get(boot, 0)
                seen_on_boot[boot] = position + 1
                self.unit_boots.append(boot)
                self.unit_positions.append(position)
            rows = run.kept_rows(cell_name)
            self.parts.append((columns, rows))
            unit = np.searchsorted(np.array(kept, dtype=np.int64), columns.run[rows])
            units.append(first + unit)
            occurrences.append(_occurrences(unit * len(columns.prompt_ids) + columns.prompt[rows]))
            side_codes = np.array([codes.setdefault(p, len(codes)) for p in columns.prompt_ids], dtype=np.int64)
            prompts.append(side_codes[columns.prompt[rows]])
        self.prompt_ids = list(codes)  # row i's prompt is prompt_ids[prompt[i]]
        self.units, self.prompt, self.occurrence = (  # each under the rows in number: 32 bits, half the memory
            np.concatenate(parts).astype(np.int32) if parts else np.array([], dtype=np.int32)
            for parts in (units, prompts, occurrences)
        )
        self.rows = len(self.units)
        self.ok = self._gather(lambda columns: columns.ok).astype(bool)
        self.bursts = self._gather(lambda columns: columns.burst).astype(bool)
        self._values: tuple[str, np.ndarray] | None = None  # the last metric's: a metric is compared whole at once

    def _gather(self, read: Callable[[RequestColumns], np.ndarray]) -> np.ndarray:
        if not self.parts:
            return np.array([], dtype=float)
        return np.concatenate([read(columns)[rows] for columns, rows in self.parts])

    def log_values(self, metric: Metric) -> np.ndarray:
        """log of the metric per row; NaN where the request failed or has no positive finite value."""
        if self._values is None or self._values[0] != metric.key:
            values = self._gather(metric.read).astype(float)
            with np.errstate(divide="ignore", invalid="ignore"):
                logs = np.log(values)
            logs[~np.isfinite(logs)] = np.nan
            self._values = metric.key, logs
        return self._values[1]

    def matrix(self, metric: Metric, codes: np.ndarray, prompts: int) -> np.ndarray:
        """(units, prompts) log values, NaN where a unit has none for a prompt; `codes`: each row's prompt column."""
        out = np.full((len(self.unit_boots), prompts), np.nan)
        if self.rows:
            out[self.units, codes] = self.log_values(metric)
        return out


def _occurrences(keys: np.ndarray) -> np.ndarray:
    """For each row, how many rows before it have its key ((unit, prompt): the same prompt sent twice in one run)."""
    if not len(keys):
        return np.array([], dtype=np.int64)
    order = np.argsort(keys, kind="stable")  # grouped by key, in row order within; the rows come nearly sorted
    ordered = keys[order]
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    index = np.arange(len(order))
    group_start = np.maximum.accumulate(np.where(starts, index, 0))
    out = np.empty(len(order), dtype=np.int64)
    out[order] = index - group_start
    return out


@dataclass(frozen=True)
class UnitTable:
    """One side's units for one metric: each kept run's boot, its order on that boot, and its mean log value."""

    boots: list[str]
    positions: np.ndarray
    means: np.ndarray

    def boot_means(self) -> np.ndarray:
        """Each boot's mean over its runs' unit means: the boot as one value."""
        grouped: dict[str, list[float]] = {}
        for boot, mean in zip(self.boots, self.means, strict=True):
            grouped.setdefault(boot, []).append(float(mean))
        return np.array([np.mean(values) for values in grouped.values()])


class Sides:
    """The sides of one comparison (or one A/A control), their prompts coded once for every metric."""

    def __init__(self, *sides: SideColumns) -> None:
        self.sides = sides
        self.codes, self.prompts = prompt_key_codes(sides)

    def shared_rows(self) -> int:
        """Rows of the first side with a partner in the second: the same unit and prompt key."""
        keys = [
            side.units.astype(np.int64) * max(self.prompts, 1) + codes
            for side, codes in zip(self.sides, self.codes, strict=True)
        ]
        return len(np.intersect1d(keys[0], keys[1], assume_unique=True))  # a key is a row's own (its occurrence)

    def tables(self, metric: Metric) -> tuple[list[UnitTable], list[np.ndarray]]:
        """Each side's units over the prompts every unit of every side measured, and each side's matrix.

        A unit with no value at all is dropped. When the sides share no prompt, a unit's mean is over its own.
        """
        matrices = [
            side.matrix(metric, codes, self.prompts) for side, codes in zip(self.sides, self.codes, strict=True)
        ]
        present = [~np.isnan(m).all(axis=1) for m in matrices]
        kept = [m[rows] for m, rows in zip(matrices, present, strict=True)]
        common = np.ones(self.prompts, dtype=bool)
        for m in kept:
            common &= ~np.isnan(m).any(axis=0)
        tables = []
        for side, m, rows in zip(self.sides, kept, present, strict=True):
            if not len(m):
                means = np.array([])
            elif common.any():  # no NaN there
                means = m[:, common].mean(axis=1)
            else:  # no shared prompt: each unit's own
                means = np.nanmean(m[:, ~np.isnan(m).all(axis=0)], axis=1)
            tables.append(
                UnitTable(
                    boots=[b for b, keep in zip(side.unit_boots, rows, strict=True) if keep],
                    positions=np.array(side.unit_positions, dtype=int)[rows],
                    means=means,
                )
            )
        return tables, kept


def prompt_key_codes(sides: tuple[SideColumns, ...]) -> tuple[list[np.ndarray], int]:
    """Each side's rows coded by prompt key (prompt id, occurrence), numbered in the order the keys first appear
    across the sides (side by side, row by row), and how many keys there are."""
    names: dict[str, int] = {}
    spans = [np.array([names.setdefault(p, len(names)) for p in side.prompt_ids], dtype=np.int64) for side in sides]
    repeats = 1 + max((int(side.occurrence.max()) for side in sides if side.rows), default=0)
    keys = np.concatenate(
        [span[side.prompt] * repeats + side.occurrence for span, side in zip(spans, sides, strict=True)]
        or [np.array([], dtype=np.int64)]
    )
    distinct, inverse = np.unique(keys, return_inverse=True)
    first = np.full(len(distinct), len(keys))  # each key's first row (return_index's stable sort: 3x the time)
    np.minimum.at(first, inverse, np.arange(len(keys)))
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    codes = rank[inverse.ravel()].astype(np.int32)  # fewer keys than rows
    bounds = np.cumsum([side.rows for side in sides])[:-1]
    return list(np.split(codes, bounds)), len(first)


def unit_tables(metric: Metric, *sides: SideColumns) -> tuple[list[UnitTable], list[np.ndarray]]:
    """Sides(*sides).tables(metric), for one metric (code the prompts once with Sides for several)."""
    return Sides(*sides).tables(metric)


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


def components(table: UnitTable) -> Components:
    grouped: dict[str, list[tuple[int, float]]] = {}
    for boot, position, mean in zip(table.boots, table.positions, table.means, strict=True):
        grouped.setdefault(boot, []).append((int(position), float(mean)))
    result = Components(runs=len(table.boots), boots=len(grouped))
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
