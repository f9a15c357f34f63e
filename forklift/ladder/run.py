"""Run a ladder: per value a fresh supervised boot, a burst, a stop; cell receipts, then the verdict.

A cell passes when the boot reached health, every request of the burst succeeded and the
log written while it ran holds no fatal line. Every boot goes through forklift.launch (so
its boot receipt, labels and clean stop are launch's own) and every burst through the bench
runner (its receipt, kind `ladder-burst`, keeps every request). The ladder receipt is
rewritten after each cell, so Ctrl-C leaves every finished cell in it; from the first boot on it
and every cell receipt name the engine as the boots recorded it (pin, version, overlay, build).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from forklift.bench.runner import BenchPlan, cell_specs
from forklift.bench.session import BenchOutcome, record_bench
from forklift.config import Config
from forklift.engines import EngineAdapter
from forklift.errors import ForkliftError
from forklift.fsio import make_folder
from forklift.ladder.axis import Axis, recommend
from forklift.ladder.memory import MemoryWatch, samplers_for
from forklift.ladder.schema import Burst, LadderBody, LadderCell
from forklift.launch.boot import engine_reason
from forklift.launch.bootlog import parse_boot_log
from forklift.launch.caches import cold_caches
from forklift.launch.plan import LaunchPlan, make_launch_plan
from forklift.launch.resolve import setting_name
from forklift.launch.schema import BootBody
from forklift.launch.session import launched
from forklift.receipts import Receipt, new_receipt, write_receipt
from forklift.receipts.envelope import Labels, Status
from forklift.workload import synthetic_workload

ENGINE_FIELDS = ("pin", "engine_version", "overlay_hash", "build")


@dataclass(frozen=True)
class Engine:
    """Which engine the ladder boots, when not the profile's own (a campaign's build)."""

    python: str | None = None
    command: list[str] | None = None
    labels: Labels | None = None  # envelope fields every receipt gets (build, ...)


def name_engine(receipt: Receipt, boot_labels: Labels) -> Receipt:
    """The receipt, naming the engine as a boot recorded it: pin, version, overlay hash and build (--build's, if given)."""
    for name in ENGINE_FIELDS:
        if getattr(boot_labels, name) is not None:
            setattr(receipt, name, getattr(boot_labels, name))
    return receipt


def boot_failure(body: BootBody) -> str | None:
    """Why a cell's boot never got ready: the engine's memory figures when it refused on memory, else its fatal line."""
    if body.outcome == "ready":
        return None
    return f"{body.outcome}: {engine_reason(body) or 'no fatal line in the log'}"


def plans(config: Config, profile: str, sets: list[str], axis: Axis, engine: Engine, check: bool) -> list[LaunchPlan]:
    """Every cell's plan, made before the first boot: a value the engine refuses stops the ladder at once."""
    return [
        make_launch_plan(
            config, profile, [*sets, axis.set_item(v)], check=check, python=engine.python, command=engine.command
        )
        for v in axis.values
    ]


def burst_plan(url: str, model: str, burst: Burst, nonce: str) -> BenchPlan:
    workload = synthetic_workload(
        input_tokens=burst.input_tokens,
        output_tokens=burst.output_tokens,
        count=burst.requests,
        ignore_eos=True,
        salt_nonce=nonce,
    )
    cells = cell_specs("batch", [burst.concurrency], burst.requests, None, 1.0)
    # one run, no warm-up: the burst is the load the setting must survive, not a measurement to compare
    return BenchPlan(url=url, model=model, workload=workload, cells=cells, runs=1, warmup=0, timeout=burst.timeout_s)


def _late_fatal(log_path: Path, offset: int, adapter: EngineAdapter) -> str | None:
    """A fatal line the engine logged after it became healthy (the burst's own failures)."""
    with open(log_path, encoding="utf-8", errors="replace") as fh:
        fh.seek(offset)
        return parse_boot_log(fh, adapter).fatal


def run_cell(
    config: Config,
    plan: LaunchPlan,
    axis: Axis,
    value: str,
    burst: Burst,
    *,
    receipts: Path,
    logs: Path,
    cold: bool,
    engine: Engine,
) -> tuple[LadderCell, Labels]:
    """One boot + burst + stop; the cell and its boot's envelope fields (pin, version, build, ...).

    KeyboardInterrupt propagates after the cell is recorded as interrupted."""
    resolved = plan.resolved
    setting = setting_name(resolved)
    extra_env = cold_caches(plan.adapter.cache_env, logs) if cold else None
    cell = LadderCell(
        key=axis.key, value=value, setting=setting, outcome="interrupted", cold=cold, cold_caches=extra_env or {}
    )
    outcome: BenchOutcome | None = None
    peak: dict[str, float] = {}
    fatal: str | None = None

    make_folder(logs)
    with launched(
        config, plan, receipts, logs, labels=engine.labels, extra_env=extra_env, raise_failed=False
    ) as booted:
        if booted.ready:
            offset = booted.server.log_path.stat().st_size
            with MemoryWatch(samplers_for(booted.server.pid)) as watch:
                outcome = record_bench(
                    burst_plan(resolved.url, resolved.served_name, burst, nonce=f"ladder-{value}"),
                    mode="batch",
                    folder=receipts,
                    boot=booted.body.model_dump(mode="json"),
                    labels=booted.labels,
                    kind="ladder-burst",
                )
            peak = watch.peak()
            fatal = _late_fatal(booted.server.log_path, offset, plan.adapter)
    body = booted.body
    cell.boot_outcome, cell.boot_seconds = body.outcome, body.boot_seconds
    cell.kv_pool_tokens, cell.kv_memory_gib = body.facts.kv_pool_tokens, body.facts.kv_memory_gib
    cell.log_path = body.log_path
    cell.boot_receipt = booted.receipt_path.name if booted.receipt_path else None
    reason = boot_failure(body)
    if reason is not None:
        cell.outcome, cell.reason = "boot-failed", reason
        return cell, booted.labels
    if outcome is None:
        raise ForkliftError(f"ladder {axis.key}={value}: the engine stopped before the burst (log: {body.log_path})")
    cell.burst_receipt = outcome.path.name
    cell.memory = peak
    records = [r for c in outcome.body.cells for r in c.requests]
    cell.requests, cell.requests_ok = len(records), sum(r.ok for r in records)
    for record in records:
        if not record.ok:
            kind = record.error_kind or "failed"
            cell.failures[kind] = cell.failures.get(kind, 0) + 1
    if outcome.status == "interrupted":
        raise KeyboardInterrupt
    if fatal:
        cell.outcome, cell.reason = "fatal-in-log", fatal
    elif cell.requests_ok < burst.requests:
        cell.outcome = "requests-failed"
        kinds = ", ".join(f"{k} {n}" for k, n in cell.failures.items())
        cell.reason = f"{cell.requests_ok}/{burst.requests} requests ok ({kinds or 'never sent'})"
    else:
        cell.outcome = "pass"
    return cell, booted.labels


def run_ladder(
    config: Config,
    profile: str,
    sets: list[str],
    axis: Axis,
    burst: Burst,
    *,
    receipts: Path,
    logs: Path,
    cold: bool = False,
    margin: str | None = None,
    stop_at_fail: bool = False,
    check: bool = True,
    engine: Engine | None = None,
    on_cell: Callable[[LadderCell], None] | None = None,
) -> tuple[LadderBody, Path]:
    """Climb the axis from its lowest value; returns the ladder body and its receipt's path."""
    engine = engine or Engine()
    cell_plans = plans(config, profile, sets, axis, engine, check)
    base = make_launch_plan(config, profile, sets, check=False, python=engine.python, command=engine.command)
    body = LadderBody(
        profile=profile,
        setting=setting_name(base.resolved),
        key=axis.key,
        values=list(axis.values),
        burst=burst,
        cold=cold,
        margin=margin,
    )
    labels = engine.labels or Labels()
    receipt = new_receipt("ladder", status="partial", **Labels(setting=body.setting).over(labels).fields())
    path = write_receipt(receipt, receipts)

    def record(status: Status) -> None:
        result = recommend(axis, {c.value: c.outcome == "pass" for c in body.cells}, margin)
        body.highest_pass, body.recommended, body.note = result.highest_pass, result.recommended, result.note
        receipt.status = status
        receipt.body = body.model_dump(mode="json")
        write_receipt(receipt, receipts, path)

    try:
        for value, plan in zip(axis.values, cell_plans, strict=False):
            cell, boot_labels = run_cell(
                config, plan, axis, value, burst, receipts=receipts, logs=logs, cold=cold, engine=engine
            )
            body.cells.append(cell)
            name_engine(receipt, boot_labels)
            cell_labels = Labels(setting=cell.setting).over(labels)
            cell_receipt = new_receipt(
                "ladder-cell", status="ok", body=cell.model_dump(mode="json"), **cell_labels.fields()
            )
            write_receipt(name_engine(cell_receipt, boot_labels), receipts)
            record("partial")
            if on_cell:
                on_cell(cell)
            passed_below = any(c.outcome == "pass" for c in body.cells[:-1])
            if stop_at_fail and cell.outcome != "pass" and passed_below:
                body.stopped_early = True
                break
    except KeyboardInterrupt:
        record("interrupted")
        raise
    record("ok")
    return body, path
