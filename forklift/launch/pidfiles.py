"""Which launches are running, so `forklift stop` can find them: one small JSON file per supervisor."""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from forklift.fsio import write_atomic
from forklift.launch.supervise import group_alive, process_alive, start_time, terminate_group


def state_dir() -> Path:
    override = os.environ.get("FORKLIFT_STATE_DIR")
    if override:
        return Path(override)
    # local: platformdirs only when FORKLIFT_STATE_DIR is unset
    from platformdirs import user_state_dir

    return Path(user_state_dir("forklift", appauthor=False)) / "running"


@dataclass(frozen=True)
class Running:
    profile: str
    url: str
    port: int
    supervisor: int  # pid of `forklift launch`
    server: int  # pid (and process group) of the engine
    log_path: str
    # start_time() of each pid when registered: after a SIGKILLed launch or a reboot the pid
    # may name another process, which must never be signalled.
    supervisor_started: int | None
    server_started: int | None  # None: the engine was already gone when registered

    @property
    def path(self) -> Path:
        return state_dir() / f"{self.port}.json"

    def supervisor_running(self) -> bool:
        return start_time(self.supervisor) == self.supervisor_started and process_alive(self.supervisor)

    def engine_running(self) -> bool:
        """The engine's process group still has members, and it is still the engine's group."""
        leader = start_time(self.server)
        if leader is not None and leader != self.server_started:
            return False  # the pid names another process now, so the group is not the engine's
        # Leader gone: Linux hands out no pid that still names a live process group, so
        # members left under it are the engine's orphaned workers.
        return group_alive(self.server)


def register(entry: Running) -> None:
    write_atomic(entry.path, json.dumps(asdict(entry)) + "\n")


def unregister(entry: Running) -> None:
    entry.path.unlink(missing_ok=True)


def listed() -> list[Running]:
    folder = state_dir()
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            entry = Running(**json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            path.unlink(missing_ok=True)  # a torn or foreign file cannot be stopped through
            continue
        if entry.supervisor_running() or entry.engine_running():
            out.append(entry)
        else:
            path.unlink(missing_ok=True)  # left by a killed launch or before a reboot: nothing to stop
    return out


def stop_running(entry: Running, timeout: float = 60.0) -> None:
    """Ask the supervisor to stop (it stops the engine's group and records it); if it is gone, stop the group.

    Only the processes the entry recorded are signalled: a pid now naming another process is left alone.
    """
    if entry.supervisor_running():
        os.kill(entry.supervisor, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while (entry.supervisor_running() or entry.engine_running()) and time.monotonic() < deadline:
            time.sleep(0.2)
    terminate_group(entry.server, entry.engine_running)
    unregister(entry)
