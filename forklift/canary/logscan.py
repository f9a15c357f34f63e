"""`canary logscan`: count, in the server's log, the lines a healthy server never prints.

The patterns are the engine adapter's (Traceback, EngineDeadError, RPC timeouts, NCCL
errors, illegal memory access, out of memory, grammar rejections, HTTP 5xx); the suite
passes only when every count is zero, and names the first line of each that is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forklift.engines import EngineAdapter, engine_adapter
from forklift.errors import UsageError
from forklift.launch.bootlog import strip_prefix
from forklift.quality.endpoint import Endpoint
from forklift.quality.schema import SuiteBody


@dataclass(frozen=True)
class LogscanOptions:
    log: Path | None = None  # default: the log of the server forklift launched


def scan(path: Path, engine: EngineAdapter, start: int = 0) -> dict[str, dict[str, Any]]:
    """Pattern name -> {count, first: line number and text}, from byte offset `start` on."""
    found: dict[str, dict[str, Any]] = {p.name: {"count": 0, "first": None} for p in engine.scan_patterns}
    with open(path, "rb") as fh:
        fh.seek(start)
        first_line = 1 + (_count_lines(path, start) if start else 0)
        for number, raw in enumerate(fh, first_line):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if engine.scan_until is not None and engine.scan_until.search(line):
                break
            for pattern in engine.scan_patterns:
                if pattern.regex.search(line):
                    entry = found[pattern.name]
                    entry["count"] += 1
                    if entry["first"] is None:
                        entry["first"] = {"line": number, "text": strip_prefix(engine, line)[:300]}
    return found


def _count_lines(path: Path, end: int) -> int:
    with open(path, "rb") as fh:
        return fh.read(end).count(b"\n")


def count_new(endpoint: Endpoint, start: int, name: str) -> int:
    """How many lines matching one pattern the server logged since byte `start`."""
    assert endpoint.log_path is not None
    return int(scan(endpoint.log_path, engine_adapter(endpoint.engine), start)[name]["count"])


def run_logscan(endpoint: Endpoint, options: LogscanOptions) -> SuiteBody:
    log = options.log or endpoint.log_path
    if log is None:
        raise UsageError("canary logscan: no server log (give --log FILE, or run with --profile to launch the server)")
    if not log.is_file():
        raise UsageError(f"canary logscan: {log}: no such log file")
    engine = engine_adapter(endpoint.engine)
    found = scan(log, engine)
    body = SuiteBody(
        suite="logscan",
        url=endpoint.url,
        model=endpoint.model,
        options={"log": str(log), "patterns": {p.name: p.regex.pattern for p in engine.scan_patterns}},
        summary={name: entry["count"] for name, entry in found.items()},
        items=[{"id": name, **entry} for name, entry in found.items()],
    )
    hits = [(name, entry) for name, entry in found.items() if entry["count"]]
    if hits:
        body.failure = "; ".join(
            f"{name} x{entry['count']} (first at line {entry['first']['line']}: {entry['first']['text'][:120]})"
            for name, entry in hits
        )
    body.passed = not hits
    return body
