"""Which launches are running, so `forklift stop` can find them: one small JSON file per supervisor."""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from forklift.receipts.store import write_atomic


def state_dir() -> Path:
    override = os.environ.get("FORKLIFT_STATE_DIR")
    if override:
        return Path(override)
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

    @property
    def path(self) -> Path:
        return state_dir() / f"{self.port}.json"


def register(entry: Running) -> None:
    write_atomic(entry.path, json.dumps(asdict(entry)) + "\n")


def unregister(entry: Running) -> None:
    entry.path.unlink(missing_ok=True)


def listed() -> list[Running]:
    folder = state_dir()
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            out.append(Running(**json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError):
            path.unlink(missing_ok=True)  # a torn or foreign file cannot be stopped through
    return out


def stop_running(entry: Running, timeout: float = 60.0) -> None:
    """Ask the supervisor to stop (it stops the engine's group and records it); if it is gone, stop the group."""
    from forklift.launch.supervise import group_alive, process_alive

    if process_alive(entry.supervisor):
        os.kill(entry.supervisor, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while (process_alive(entry.supervisor) or group_alive(entry.server)) and time.monotonic() < deadline:
            time.sleep(0.2)
    for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
        if not group_alive(entry.server):
            break
        try:
            os.killpg(entry.server, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while group_alive(entry.server) and time.monotonic() < deadline:
            time.sleep(0.2)
    unregister(entry)
