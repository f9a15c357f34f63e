"""Run the engine as a supervised child: own process group, log to a file, health wait, clean stop.

The child is started from an argv list (never a shell string) in a new session,
so stopping it means signalling its whole process group: the API server and
every engine/worker process it forked. `stop` returns only when that group is gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from forklift.engines import EngineAdapter
from forklift.errors import ForkliftError
from forklift.fsio import make_folder, writing
from forklift.launch.bootlog import parse_boot_log, strip_prefix
from forklift.launch.cgroup import MemoryCgroup, create
from forklift.launch.resolve import Resolved
from forklift.launch.schema import BootBody, BootFacts, Outcome

LAST_LINES = 20
POLL_S = 0.5
DYING_GRACE_S = 5.0


@dataclass
class Server:
    """A started engine: its process (group leader), where it logs, and where it listens."""

    process: subprocess.Popen[bytes]
    log_path: Path
    url: str
    model: str
    started: float
    cgroup: MemoryCgroup | None = None  # the profile's memory cgroup, removed by stop()

    @property
    def pid(self) -> int:
        return self.process.pid


def start(resolved: Resolved, log_path: Path, extra_env: dict[str, str] | None = None) -> Server:
    """Start the engine (inside the profile's memory cgroup, if it has one); its output goes to log_path."""
    make_folder(log_path.parent)
    env = {**os.environ, **resolved.env, **(extra_env or {})}
    cgroup = create(resolved.memory, resolved.profile) if resolved.memory else None
    with writing(log_path):
        log = open(log_path, "ab")  # noqa: SIM115  # opened alone: an engine that cannot start is not a place error
    with log:
        try:
            process = subprocess.Popen(
                resolved.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # its own process group: one signal reaches every worker
                close_fds=True,
                preexec_fn=cgroup.enter() if cgroup else None,
            )
        except (OSError, subprocess.SubprocessError) as exc:  # no such command, not executable, no cgroup entry
            if cgroup:
                cgroup.remove()
            reason = exc.strerror if isinstance(exc, OSError) else f"could not enter {cgroup.path if cgroup else ''}"
            raise ForkliftError(f"cannot start the engine command {resolved.argv[0]!r}: {reason}") from None
    return Server(process, log_path, resolved.url, resolved.served_name, time.monotonic(), cgroup)


def last_lines(log_path: Path, adapter: EngineAdapter, count: int = LAST_LINES) -> list[str]:
    try:
        with open(log_path, encoding="utf-8", errors="replace") as fh:
            tail = deque(fh, maxlen=count)
    except FileNotFoundError:
        return []
    return [strip_prefix(adapter, line) for line in tail]


def read_facts(server: Server, adapter: EngineAdapter) -> BootFacts:
    with open(server.log_path, encoding="utf-8", errors="replace") as fh:
        return parse_boot_log(fh, adapter)


# Called on every poll of a boot with the seconds since start and the log's last line (for a live status).
OnPoll = Callable[[float, str], None]


def wait_healthy(server: Server, adapter: EngineAdapter, timeout: float, on_poll: OnPoll | None = None) -> BootBody:
    """Poll the health endpoint until ready, the child exits (died) or the timeout passes.

    A log line saying the engine is going down counts as died once the child has had
    DYING_GRACE_S to exit by itself (vLLM can take half a minute to tear down after a
    failed start; the cause is already in the log). KeyboardInterrupt propagates: the
    caller stops the server and records "interrupted".
    """
    health = server.url + adapter.health_path
    deadline = server.started + timeout
    outcome: Outcome = "timeout"
    dying_since: float | None = None
    carry = ""  # the tail of what was read, so a line split across reads still matches
    last = ""
    with httpx.Client(timeout=2.0, trust_env=False) as client, open(server.log_path, "rb") as log:
        while True:
            if server.process.poll() is not None:
                outcome = "died"
                break
            if dying_since is None:
                text = carry + log.read().decode("utf-8", "replace")
                if adapter.dying_regex.search(text):
                    dying_since = time.monotonic()
                carry = text[-256:]
                complete = [line for line in text[: max(text.rfind("\n"), 0)].splitlines() if line.strip()]
                last = strip_prefix(adapter, complete[-1]).strip() if complete else last
            if on_poll is not None:
                on_poll(time.monotonic() - server.started, last)
            if dying_since is not None and time.monotonic() - dying_since >= DYING_GRACE_S:
                outcome = "died"
                break
            try:
                if client.get(health).status_code == 200:
                    outcome = "ready"
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
    return boot_body(server, adapter, outcome)


def boot_body(server: Server, adapter: EngineAdapter, outcome: Outcome) -> BootBody:
    body = BootBody(
        outcome=outcome,
        exit_code=server.process.poll(),
        boot_seconds=round(time.monotonic() - server.started, 2),
        log_path=str(server.log_path),
        last_lines=[] if outcome == "ready" else last_lines(server.log_path, adapter),
        facts=read_facts(server, adapter),
        memory=server.cgroup.reading() if server.cgroup else None,
    )
    if outcome == "ready":
        body.facts.fatal = None  # an error logged and survived is not the cause of anything
    return body


def _fields(pid: str) -> list[str] | None:
    """/proc/<pid>/stat from field 3 (state) on, None if the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            stat = fh.read()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()  # the parenthesised command name may hold spaces


def _stat(pid: str) -> tuple[str, int] | None:
    """(state, process group) of a process from /proc, None if it is gone."""
    fields = _fields(pid)
    return None if fields is None else (fields[0], int(fields[2]))


def start_time(pid: int) -> int | None:
    """When the process started (clock ticks since boot, stat field 22): with the pid, it names one process,
    so a pid the kernel handed to someone else is told apart. None if no such process."""
    fields = _fields(str(pid))
    return None if fields is None else int(fields[22 - 3])


def process_alive(pid: int) -> bool:
    """Running, not a zombie waiting for its parent to reap it."""
    stat = _stat(str(pid))
    return stat is not None and stat[0] != "Z"


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group."""
    members = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            stat = _stat(entry.name)
            if stat is not None and stat[1] == pgid and stat[0] != "Z":
                members.append(int(entry.name))
    return members


def group_alive(pgid: int) -> bool:
    return bool(group_members(pgid))


def terminate_group(
    pgid: int, alive: Callable[[], bool], *, grace: float = 20.0, reap: Callable[[], None] = lambda: None
) -> bool:
    """SIGTERM a process group and wait up to `grace` s while `alive()`, then SIGKILL and wait 10 s more.

    `reap` collects our own exited child between polls (a zombie leader would keep the group listed).
    True when the group is gone.
    """
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        if not alive():
            break
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while alive() and time.monotonic() < deadline:
            reap()
            time.sleep(0.2)
    reap()
    return not alive()


def stop(server: Server, grace: float = 20.0) -> None:
    """Terminate the whole process group, wait, then kill; return when no member is left (and its
    memory cgroup, read a last time, is removed)."""
    pgid = server.process.pid  # start_new_session made the child its group's leader
    if not terminate_group(pgid, lambda: group_alive(pgid), grace=grace, reap=lambda: _reap(server)):
        raise ForkliftError(f"engine process group {pgid} survived SIGKILL (log: {server.log_path})")
    if server.cgroup:
        server.cgroup.remove()


def _reap(server: Server) -> None:
    # The leader is our child: reap it, or it stays a zombie and the group looks alive.
    with contextlib.suppress(subprocess.TimeoutExpired):
        server.process.wait(timeout=0)
