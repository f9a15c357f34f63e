"""One launched session: boot a planned setting, hand it to the caller, stop it whatever happens.

Every stage that measures a server it boots itself (bench, quality and canary, ladder,
campaign) runs inside `launched(...)`: the engine is findable by `forklift stop` from its
first second, `forklift stop` (SIGTERM) ends the session like Ctrl-C, and on the way out the
engine's whole process group is stopped and the GPUs checked idle, on an exception too.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from forklift.config import Config
from forklift.errors import ForkliftError
from forklift.launch import gpus
from forklift.launch.boot import Booted, boot, check_control, control_variable, failure_message
from forklift.launch.pidfiles import Running, register, unregister
from forklift.launch.plan import LaunchPlan, receipt_labels
from forklift.launch.preflight import preflight
from forklift.launch.supervise import OnPoll, Server, start_time, stop
from forklift.receipts import write_receipt
from forklift.receipts.envelope import Labels
from forklift.receipts.store import read_receipt

__all__ = ["launch_and_serve", "launched"]


def _sigterm_as_interrupt(signum: int, frame: FrameType | None) -> None:  # `forklift stop` sends SIGTERM
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
    booted: Booted, watched: list[int], before: gpus.GpuState | None, group: set[int], receipts: Path
) -> None:
    """The GPU idle check after stop, written into the boot receipt; a GPU left busy fails the launch."""
    after = gpus.settled_state(watched)
    failure: ForkliftError | None = None
    try:
        verdict = (
            gpus.NO_SMI
            if after is None or before is None
            else gpus.idle_verdict(watched, before, after, gpus.processes(), group, gpus.bus_index())
        )
    except ForkliftError as exc:
        verdict, failure = f"not idle: {exc}", exc
    booted.body.after_stop = verdict
    cgroup = booted.server.cgroup
    if cgroup:  # over the whole session, not only the boot
        booted.body.memory = cgroup.remove()
    memory = booted.body.memory.model_dump() if cgroup and booted.body.memory else None
    if booted.receipt_path is not None:
        receipt = read_receipt(booted.receipt_path)
        receipt.body = {**receipt.body, "after_stop": verdict, **({"memory": memory} if memory else {})}
        if failure is not None:
            receipt.status = "failed"
        write_receipt(receipt, receipts, booted.receipt_path)
    if failure is not None:
        raise failure


@contextmanager
def launched(
    config: Config,
    plan: LaunchPlan,
    receipts: Path,
    logs: Path,
    *,
    control: bool = False,
    labels: Labels | None = None,
    extra_env: dict[str, str] | None = None,
    raise_failed: bool = True,
    on_start: Callable[[Server], None] | None = None,
    on_poll: OnPoll | None = None,
) -> Iterator[Booted]:
    """Preflight and boot the plan, yield the booted engine, stop it on the way out.

    With control, a made-up engine variable is exported and the boot fails unless the engine
    warned about exactly that one. `labels` are put over the launch's own envelope fields (a
    campaign's build); `extra_env` is exported unchecked (a fresh compile cache). A boot that
    never got ready raises, or with raise_failed=False is yielded already stopped (`booted.ready`
    is False). Ctrl-C or `forklift stop` inside the block stops the engine and propagates: the caller's
    work was cut, and only the caller knows what of it is finished (nothing may be recorded ok for it).
    """
    resolved, adapter = plan.resolved, plan.adapter
    python, found = preflight(resolved, adapter)
    fields = (labels or Labels()).over(receipt_labels(config, plan, python))
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

    before = gpus.gpu_state()
    watched = resolved.gpus or ([0] if before and before.memory else [])  # a GPU box: the profile's GPUs, else GPU 0
    try:
        booted = boot(
            resolved,
            adapter,
            log_path,
            receipts,
            extra_env={**(extra_env or {}), **({variable: "1"} if variable else {})},
            warnings=[*plan.warnings, *found],
            labels=fields,
            on_start=started,
            on_poll=on_poll,
        )
        if not booted.ready:
            if raise_failed:  # the preflight's warnings may say why (a JIT toolchain torch cannot use)
                raise ForkliftError(failure_message(booted.body) + "".join(f"; preflight warned: {w}" for w in found))
            yield booted  # boot() already stopped it
            return
        try:
            if variable:
                check_control(booted.body, variable)
            yield booted
        finally:
            group = _group_pids(booted.server.pid)
            stop(booted.server)
            _record_after_stop(booted, watched, before, group, receipts)
    finally:
        for entry in entries:
            unregister(entry)
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def launch_and_serve(
    config: Config,
    plan: LaunchPlan,
    receipts: Path,
    logs: Path,
    *,
    control: bool = False,
    on_ready: Callable[[Booted], None] | None = None,
    labels: Labels | None = None,
    on_start: Callable[[Server], None] | None = None,
    on_poll: OnPoll | None = None,
) -> Booted:
    """`forklift launch`: boot, report, then serve in the foreground until Ctrl-C / `forklift stop`.

    With control the session ends once the positive control held (nothing to serve). Serving has no end of
    its own: Ctrl-C or `forklift stop` while serving is how it finishes, not a cut (a Ctrl-C during the boot is)."""
    with launched(
        config, plan, receipts, logs, control=control, labels=labels, on_start=on_start, on_poll=on_poll
    ) as booted:
        if on_ready:
            on_ready(booted)
        if not control:
            try:
                while booted.server.process.poll() is None:
                    time.sleep(0.5)
            except KeyboardInterrupt:
                return booted  # the with statement stops the engine on the way out
            raise ForkliftError(
                f"engine exited with code {booted.server.process.returncode} while serving (log: {booted.server.log_path})"
            )
    return booted
