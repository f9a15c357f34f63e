"""A campaign: a folder of receipts, cut into the rows a reviewer reads.

A row is one box, one setting and workload, one cell, the baseline beside
the candidate. The baseline is a build (engine version + overlay hash; by
default the oldest version) or, with `baseline` naming a setting, that
setting on the same build (to judge a knob rather than a pin). Rows are
never pooled across boxes. A side that never got to bench says why, from
its boot receipt ("refused (4.63 GiB available, 4.76 needed)"), never a
blank that reads as zero.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from packaging.version import InvalidVersion, Version

from forklift.errors import ForkliftError, UsageError
from forklift.launch.boot import engine_reason
from forklift.launch.schema import BootBody
from forklift.receipts import Receipt, read_receipts, validated_body
from forklift.receipts.envelope import setting_label
from forklift.receipts.packed import written_name
from forklift.report.numbers import box_name
from forklift.report.ship import PLAN_KIND, ShipSpec
from forklift.stats import (
    BenchRun,
    CellResult,
    GroupComparison,
    MarginRule,
    Margins,
    bench_runs,
    compare_groups,
    rule_margins,
)
from forklift.stats.runs import build_label
from forklift.stats.sample import output_throughput, server_tok_step


@dataclass(frozen=True)
class Boot:
    path: Path
    receipt: Receipt
    body: BootBody

    @property
    def setting(self) -> str:
        return setting_label(self.receipt)

    @property
    def build(self) -> str:
        return build_label(self.receipt)


def boot_state(boot: Boot | None) -> str:
    """Why a side has no numbers, in the engine's own figures."""
    if boot is None:
        return "not run"
    outcome = boot.body.outcome
    if outcome in ("refused", "died"):
        return f"{outcome} ({(engine_reason(boot.body) or 'no fatal line in the log')[:120]})"
    if outcome == "timeout":
        waited = f" after {boot.body.boot_seconds:.0f} s" if boot.body.boot_seconds is not None else ""
        return f"boot timed out{waited}"
    if outcome == "booting":
        return "boot never finished (its receipt is partial)"
    return f"boot {outcome}, no bench receipt"


@dataclass
class Side:
    """One side of a row: the bench receipts of a setting on a box, or the boot that stopped it."""

    build: str
    setting: str
    runs: list[BenchRun] = field(default_factory=list)
    boot: Boot | None = None

    @property
    def pool(self) -> int | None:
        """KV pool tokens as the server stated them (metrics info) or the boot log reported them."""
        for run in self.runs:
            stated = run.body.server_info.get("kv_cache_size_tokens")
            if stated is not None:
                return int(stated)
            if run.body.boot and (run.body.boot.get("facts") or {}).get("kv_pool_tokens") is not None:
                return int(run.body.boot["facts"]["kv_pool_tokens"])
        if self.boot is not None:
            return self.boot.body.facts.kv_pool_tokens
        return None

    @property
    def state(self) -> str | None:
        """None when there are numbers; else why not."""
        return None if self.runs else boot_state(self.boot)

    def throughput(self, cell: str) -> float | None:
        return output_throughput(self.runs, cell) if self.runs else None

    def tok_step(self, cell: str) -> str:
        value = server_tok_step(self.runs, cell)
        if value is not None:
            return f"{value:.2f}"
        deltas = [found.metrics_delta for run in self.runs if (found := run.cell(cell)) is not None]
        return "no spec" if any(deltas) else "unknown"


@dataclass
class Row:
    host: str
    workload: str
    cell: str
    old: Side
    new: Side
    result: CellResult | None = None
    refused: str | None = None  # a comparability guard's one line
    pool: list[list[BenchRun]] = field(default_factory=list)  # other builds' runs here, pooled for the boot sd
    margins: Margins = field(default_factory=Margins)  # the campaign's, per metric and cell

    @property
    def setting(self) -> str:
        same = self.old.setting == self.new.setting
        return self.old.setting if same else f"{self.old.setting} → {self.new.setting}"


@dataclass
class Campaign:
    folder: Path
    receipts: list[tuple[Path, Receipt]]
    runs: list[BenchRun]
    boots: list[Boot]
    builds: list[str]  # baseline first when comparing builds
    baseline: str | None  # the build or setting rows compare against; None: one build, nothing to compare
    by_setting: bool
    rows: list[Row]
    comparisons: list[GroupComparison]
    plan: dict[str, Any] | None = None  # the campaign-plan receipt's body: builds, order, [ship] gates

    @property
    def ship(self) -> ShipSpec | None:
        gates = (self.plan or {}).get("ship")
        return ShipSpec.model_validate(gates) if gates else None


def plan_margins(plan: dict[str, Any] | None) -> Margins:
    """The margins the campaign-plan receipt states (campaign.toml's `margins`); a plan written before them has none."""
    return rule_margins([MarginRule.model_validate(rule) for rule in (plan or {}).get("margins") or []])


def _boots(receipts: list[tuple[Path, Receipt]]) -> list[Boot]:
    """Boot receipts, less a ladder's own boots: those are rows of its ladder table, not settings to compare."""
    ladder = {str(r.body.get("boot_receipt")) for _, r in receipts if r.kind == "ladder-cell"}
    return [
        Boot(path, r, validated_body(path, r, BootBody))
        for path, r in receipts
        if r.kind == "boot" and written_name(path) not in ladder
    ]


class Measured(Protocol):
    """A receipt read for a report (a bench run, a boot, a suite run): what build it measured."""

    @property
    def receipt(self) -> Receipt: ...

    @property
    def build(self) -> str: ...


def builds_oldest_first(items: Iterable[Measured]) -> list[str]:
    """Oldest first: by engine version where it parses, else by when it was first measured."""
    first_seen: dict[str, datetime] = {}
    versions: dict[str, Version | None] = {}
    for item in sorted(items, key=lambda x: x.receipt.created):
        first_seen.setdefault(item.build, item.receipt.created)
        try:
            versions[item.build] = Version(str(item.receipt.engine_version))
        except InvalidVersion:
            versions[item.build] = None
    parsed = all(v is not None for v in versions.values())
    return sorted(first_seen, key=lambda b: (versions[b], first_seen[b]) if parsed else (first_seen[b],))


def _host(machine_id: str, runs: list[BenchRun], boots: list[Boot]) -> str:
    items: list[BenchRun | Boot] = [*runs, *boots]
    for item in items:
        if item.receipt.fingerprint.machine_id == machine_id:
            return box_name(item.receipt.fingerprint)
    return machine_id


def workload_labels(runs: list[BenchRun]) -> dict[str, str]:
    """Workload hash -> the name rows show: its name, with its prompt count where two workloads share a name
    (a campaign's C1 and C16 suites send the same shape, 16 and 128 prompts: never one side)."""
    names: dict[str, set[str]] = {}
    for run in runs:
        names.setdefault(run.body.workload.name, set()).add(run.body.workload.hash)
    out = {}
    for run in runs:
        identity = run.body.workload
        shared = len(names[identity.name]) > 1
        out[identity.hash] = f"{identity.name} ({identity.prompts} prompts)" if shared else identity.name
    return out


def _side(build: str, setting: str, machine: str, workload: str, runs: list[BenchRun], boots: list[Boot]) -> Side:
    """`workload` is a workload hash (or the dash of a side with no bench)."""
    mine = [
        r
        for r in runs
        if (r.build, r.setting, r.machine_id, r.body.workload.hash) == (build, setting, machine, workload)
    ]
    boot = next(
        (
            b
            for b in reversed(boots)
            if (b.build, b.setting, b.receipt.fingerprint.machine_id) == (build, setting, machine)
        ),
        None,
    )
    return Side(build, setting, mine, boot)


def _pool(
    builds: list[str], pair: tuple[str, str], setting: str, machine: str, workload: str, runs: list[BenchRun]
) -> list[list[BenchRun]]:
    """Each build outside the pair, its runs of this setting, box and workload (builds without any left out)."""
    groups = [_side(build, setting, machine, workload, runs, []).runs for build in builds if build not in pair]
    return [group for group in groups if group]


def _cells(runs: list[BenchRun]) -> list[str]:
    """Cell names in the order measured; one dash row when there are none (a side that never ran)."""
    return list(dict.fromkeys(cell.name for run in runs for cell in run.body.cells)) or ["–"]


def _rows(
    old: Side, new: Side, host: str, workload: str, seed: int, pool: list[list[BenchRun]], margins: Margins
) -> tuple[list[Row], GroupComparison | None]:
    """Rows of one setting pair; compared when both sides have numbers, else showing why one has none.

    `pool`: the other builds' runs of the same setting, box and workload, whose boots join the pooled
    boot-to-boot sd (forklift.stats.interval.pooled_change)."""
    cells = _cells(old.runs + new.runs)
    if not (old.runs and new.runs):
        return [Row(host, workload, name, old, new, pool=pool, margins=margins) for name in cells], None
    try:
        # a campaign's A/A control (the baseline side benched twice, aa = 1 and 2) floors every interval
        control = [run for run in old.runs if run.receipt.aa]
        aa_runs = control if len({run.receipt.aa for run in control}) > 1 else None
        comparison = compare_groups(old.runs, new.runs, seed=seed, aa_runs=aa_runs, margins=margins, pool_runs=pool)
    except ForkliftError as refused:
        return [
            Row(host, workload, name, old, new, refused=str(refused), pool=pool, margins=margins) for name in cells
        ], None
    results = {c.cell: c for c in comparison.cells}
    rows = [Row(host, workload, name, old, new, result=results.get(name), pool=pool, margins=margins) for name in cells]
    return rows, comparison


def load_campaign(folder: Path, *, baseline: str | None = None, seed: int = 0) -> Campaign:
    receipts = read_receipts([folder])
    runs, boots = bench_runs(receipts), _boots(receipts)
    if not runs and not boots and not any(r.kind in ("quality", "canary", "ladder") for _, r in receipts):
        raise ForkliftError(f"{folder}: no bench, boot, ladder, quality or canary receipts to report")
    plans = sorted((r for _, r in receipts if r.kind == PLAN_KIND), key=lambda r: r.created)
    plan = plans[-1].body if plans else None
    builds = builds_oldest_first([*runs, *boots])
    planned = (plan or {}).get("baseline")
    if baseline is None and planned in builds:  # the campaign's own baseline first, as it was planned
        builds = [planned, *(b for b in builds if b != planned)]
    settings = list(dict.fromkeys([r.setting for r in runs] + [b.setting for b in boots]))
    by_setting = baseline is not None and baseline not in builds
    if by_setting and baseline not in settings:
        raise UsageError(
            f"--baseline {baseline!r}: not a build ({', '.join(builds)}) or setting ({', '.join(settings)})"
        )
    if baseline is None and len(builds) > 1:
        baseline = builds[0]
    margins = plan_margins(plan)
    machines = list(dict.fromkeys([r.machine_id for r in runs] + [b.receipt.fingerprint.machine_id for b in boots]))
    labels = workload_labels(runs)
    workloads = list(dict.fromkeys(r.body.workload.hash for r in runs)) or ["–"]
    rows: list[Row] = []
    comparisons: list[GroupComparison] = []
    for machine in machines:
        host = _host(machine, runs, boots)
        for workload in workloads:
            pairs: list[tuple[tuple[str, str], tuple[str, str]]]
            if by_setting and baseline is not None:
                pairs = [((build, baseline), (build, s)) for build in builds for s in settings if s != baseline]
            elif baseline is not None:
                pairs = [((baseline, s), (b, s)) for b in builds if b != baseline for s in settings]
            else:
                pairs = [((builds[0], s), (builds[0], s)) for s in settings]
            for (old_build, old_setting), (new_build, new_setting) in pairs:
                old = _side(old_build, old_setting, machine, workload, runs, boots)
                new = _side(new_build, new_setting, machine, workload, runs, boots)
                if not (old.runs or new.runs or old.boot or new.boot):
                    continue
                shown = labels.get(workload, workload)
                if baseline is None:  # one build: numbers, nothing to compare against
                    rows += [Row(host, shown, name, old, Side(new_build, new_setting)) for name in _cells(old.runs)]
                    continue
                pool = [] if by_setting else _pool(builds, (old_build, new_build), new_setting, machine, workload, runs)
                new_rows, comparison = _rows(old, new, host, shown, seed, pool, margins)
                rows += new_rows
                if comparison is not None:
                    comparisons.append(comparison)
    return Campaign(folder, receipts, runs, boots, builds, baseline, by_setting, rows, comparisons, plan)
