"""`forklift launch`: from config and --set to a checked plan, then a supervised boot in the foreground."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from forklift.config import Config
from forklift.engines import EngineAdapter
from forklift.engines import adapter as engine_adapter
from forklift.errors import ForkliftError
from forklift.launch.boot import Booted, boot, check_control, control_variable, failure_message, setting_name
from forklift.launch.pidfiles import Running, register, unregister
from forklift.launch.resolve import Resolved, parse_sets, resolve
from forklift.launch.supervise import OnPoll, Server, start_time, stop


@dataclass
class Plan:
    resolved: Resolved
    adapter: EngineAdapter
    warnings: list[str] = field(default_factory=list)
    checked_against: str | None = None  # the engine version flags and knobs were checked against
    knobs_from: str | None = None  # with no engine installed: where the knobs were checked


def make_plan(
    config: Config,
    name: str,
    sets: list[str],
    port: int | None = None,
    check: bool = True,
    python: str | None = None,
    command: list[str] | None = None,
) -> Plan:
    """Resolve the profile; when the engine is installed (and check), check flags and knobs against it.

    `python` or `command` replace the profile's engine (a campaign's build runs every setting).
    """
    from dataclasses import replace

    from forklift.launch.engine_checks import check_flags, check_knobs, legacy_warnings
    from forklift.launch.preflight import engine_python

    adapter = engine_adapter(config.data.engine.kind)
    choices, overrides = parse_sets(sets)
    resolved = resolve(config.data.profiles, name, choices, overrides, adapter)
    if python is not None or command is not None:
        resolved = replace(resolved, python=python, command=command or adapter.serve_argv(python))
    if port is not None:
        moved = [replace(f, values=(str(port),)) if f.name == "--port" else f for f in resolved.flags]
        resolved = replace(resolved, port=port, flags=moved)
    plan = Plan(resolved, adapter, legacy_warnings(resolved, adapter))
    if not check:
        return plan
    python = engine_python(resolved, adapter)
    if python and Path(python).exists():
        from forklift.installed.package import site_from_python
        from forklift.knobs.flags import capture_flags
        from forklift.knobs.registry import registry

        check_knobs(resolved, adapter, registry(site_from_python(Path(python), adapter.package), adapter, reads=False))
        flags = capture_flags(python, adapter)
        check_flags(resolved, flags)
        plan.checked_against = flags.version
        return plan
    # No engine here (a CI box printing recipes): knobs are still checked, against the pinned
    # upstream tree with the series applied, when that tree can be had.
    from forklift.errors import UnreachableError
    from forklift.knobs.report import knob_report

    try:
        check_knobs(resolved, adapter, knob_report(config).patched)
        plan.knobs_from = "the pinned tree plus the series"
    except UnreachableError as exc:
        plan.warnings.append(f"knobs not checked: the pinned upstream tree is not cached and {exc}")
    return plan


def receipt_labels(config: Config, plan: Plan, python: str | None, build: str | None) -> dict[str, object]:
    """The envelope fields every receipt of this launch carries: pin, engine version, overlay hash, build, setting.

    The overlay hash is what the distribution's series changed in the installed engine (none
    when it is not applied, or when the engine runs through a command forklift cannot see into).
    """
    from forklift.knobs.flags import engine_version
    from forklift.receipts.envelope import default_build

    version = plan.checked_against or (engine_version(python, plan.adapter) if python else None)
    overlay = installed_overlay(config, python, plan.adapter) if python else None
    return {
        "pin": config.data.upstream.model_dump(),
        "engine_version": version,
        "overlay_hash": overlay,
        "build": build or default_build(version, overlay),
        "setting": setting_name(plan.resolved),
    }


def installed_overlay(config: Config, python: str, adapter: EngineAdapter) -> str | None:
    from forklift.installed.package import locate
    from forklift.installed.verify import installed_overlay_hash
    from forklift.series.gate import configured_series

    try:
        return installed_overlay_hash(
            locate(Path(python), adapter.package, adapter.serve_script), configured_series(config)
        )
    except ForkliftError:  # no RECORD, no series: the build is labelled by its version alone
        return None


def _sigterm_as_interrupt(signum, frame):  # `forklift stop` sends SIGTERM: stop like Ctrl-C
    raise KeyboardInterrupt


def _group_pids(pgid: int) -> set[int]:
    """Every live process of the engine's group (the ranks included), read before it is stopped."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    pids.add(int(entry.name))
            except OSError:
                continue
    return pids


def _record_after_stop(
    booted: Booted, gpus: list[int], before: dict[int, int], group: set[int], receipts: Path
) -> None:
    """The GPU idle check after stop, written into the boot receipt; a GPU left busy fails the launch."""
    from forklift.launch import gpus as gpu_state
    from forklift.receipts import write_receipt
    from forklift.receipts.store import read_receipt

    after = gpu_state.memory_used()
    try:
        if after is None:
            verdict = gpu_state.NO_SMI
        else:
            verdict = gpu_state.idle_verdict(gpus, before, after, gpu_state.processes(), group)
        failure = None
    except ForkliftError as exc:
        verdict, failure = f"not idle: {exc}", exc
    booted.body.after_stop = verdict
    if booted.receipt_path is not None:
        receipt = read_receipt(booted.receipt_path)
        receipt.body = {**receipt.body, "after_stop": verdict}
        if failure is not None:
            receipt.status = "failed"
        write_receipt(receipt, receipts, booted.receipt_path)
    if failure is not None:
        raise failure


def launch(
    config: Config,
    plan: Plan,
    receipts: Path,
    logs: Path,
    control: bool = False,
    on_ready: Callable[[Booted], None] | None = None,
    serve: bool = True,
    labels: dict[str, object] | None = None,
    extra_env: dict[str, str] | None = None,
    raise_failed: bool = True,
    on_start: Callable[[Server], None] | None = None,
    on_poll: OnPoll | None = None,
) -> Booted:
    """Preflight, boot, report; then keep serving until Ctrl-C / `forklift stop` (unless serve=False).

    With control, a made-up engine variable is exported and the boot fails unless the
    engine warned about exactly that one. `labels` override the receipts' envelope fields
    (a campaign's build name); `extra_env` is exported unchecked (a fresh compile cache).
    With raise_failed=False a boot that never got ready is returned (stopped), not raised.
    """
    from forklift.launch.preflight import preflight

    resolved, adapter = plan.resolved, plan.adapter
    python = preflight(resolved, adapter)
    fields = {**receipt_labels(config, plan, python, None), **(labels or {})}
    variable = control_variable(adapter) if control else None
    log_path = logs / f"{time.strftime('%Y%m%dT%H%M%S')}-{resolved.profile}-{resolved.port}.log"
    main_thread = threading.current_thread() is threading.main_thread()  # signals can only be set there
    previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt) if main_thread else None
    entries: list[Running] = []

    def started(server: Server) -> None:  # findable by `forklift stop` from the first second of the boot
        entries.append(
            Running(
                resolved.profile,
                resolved.url,
                resolved.port,
                os.getpid(),
                server.pid,
                str(log_path),
                supervisor_started=start_time(os.getpid()),
                server_started=start_time(server.pid),
            )
        )
        register(entries[0])
        if on_start:
            on_start(server)

    from forklift.launch import gpus as gpu_state

    gpus = resolved.gpus or ([0] if gpu_state.memory_used() else [])  # a GPU box: the profile's GPUs, else GPU 0
    before = gpu_state.memory_used() or {}
    try:
        booted = boot(
            resolved,
            adapter,
            log_path,
            receipts,
            extra_env={**(extra_env or {}), **({variable: "1"} if variable else {})},
            warnings=plan.warnings,
            receipt_fields=fields,
            on_start=started,
            on_poll=on_poll,
        )
        if booted.body.outcome != "ready":
            if not raise_failed:
                return booted
            raise ForkliftError(failure_message(booted.body))
        try:
            if variable:
                check_control(booted.body, variable)
            if on_ready:
                on_ready(booted)
            while serve and booted.server.process.poll() is None:
                time.sleep(0.5)
            if serve:
                raise ForkliftError(
                    f"engine exited with code {booted.server.process.returncode} while serving (log: {log_path})"
                )
        except KeyboardInterrupt:
            pass
        finally:
            group = _group_pids(booted.server.pid)
            stop(booted.server)
            _record_after_stop(booted, gpus, before, group, receipts)
        return booted
    finally:
        for entry in entries:
            unregister(entry)
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
