"""`forklift check` replayed from the whole-check result cache (series/resultcache.py), and the
recording of a fresh run's output that fills it.

Runs before typer parses anything, so a replay imports neither typer, rich nor pydantic. Only the plain
forms of the command line are replayed: `[-c PATH] [--width N] check [--json] [--digests] [--receipts
PATH]`; any other word (--junit and --summary write more files, --verify-cache and --fresh ask for a
run, a typo gets typer's message) runs the check as usual and stores nothing. `--fresh` runs it
and stores the result, as the same command line without it would.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from forklift.series.gate import GateResult
    from forklift.source.cache import Cache

GLOBAL_VALUES = ("-c", "--config", "--width")
CHECK_FLAGS = ("--json", "--digests", "--fresh")
FRESH = "--fresh"  # apply again, and store the result for the next run
CHECK_VALUES = ("--receipts",)


def config_path(argv: list[str]) -> Path | None:
    """forklift.toml as a plain `check` command line names it; None for any other command line."""
    words, config, command = list(argv), Path("forklift.toml"), None
    while words:
        word = words.pop(0)
        if command is None and word in GLOBAL_VALUES and words:
            value = words.pop(0)
            config = Path(value) if word != "--width" else config
        elif command is None and word == "check":
            command = word
        elif command is not None and word in CHECK_FLAGS:
            continue
        elif command is not None and word in CHECK_VALUES and words:
            words.pop(0)
        else:
            return None
    if command is None:
        return None
    return config / "forklift.toml" if config.is_dir() else config


class Tee:
    """A text stream that writes through to `stream` and keeps a copy of what was written."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return self.stream.write(text)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, flush...: the stream's own
        return getattr(self.stream, name)


@dataclass
class Recording:
    cache: Cache
    key: str
    context: dict[str, Any]
    started_ns: int
    streams: tuple[Tee, Tee] = field(default_factory=lambda: (Tee(sys.stdout), Tee(sys.stderr)))


_recording: Recording | None = None


def replay_or_record(argv: list[str]) -> None:
    """Exit with the stored check's output when every input is unchanged; else record this run's output."""
    global _recording
    path = config_path(argv)
    if path is None:
        return
    from forklift.series.resultcache import context_key, replay, run_context, write_replay
    from forklift.source.cache import default_cache

    cache = default_cache()
    if cache.verify:  # --verify-cache's environment forms: the tree is to be re-hashed, so the check runs
        return
    try:
        context = run_context([word for word in argv if word != FRESH], path.read_bytes())
    except OSError:  # no forklift.toml: the check says so
        return
    key = context_key(context)
    played = None if FRESH in argv else replay(cache, key, context)
    if played is not None:
        write_replay(played)
        sys.stdout.write(played.stdout)
        sys.stdout.flush()
        sys.stderr.write(played.stderr)
        sys.exit(played.exit_code)
    _recording = Recording(cache, key, context, time.time_ns())
    sys.stdout, sys.stderr = _recording.streams


def store_result(result: GateResult, exit_code: int) -> None:
    """Store this recorded run for replay, unless it built its pristine tree in the cache (a terminal showed
    progress that a warm run does not) or read a git pin. A folder pin read where it lies shows none."""
    global _recording
    recording, _recording = _recording, None
    if recording is None or result.inputs is None:
        return
    out, err = recording.streams
    sys.stdout, sys.stderr = out.stream, err.stream
    sys.stdout.flush()
    if result.tree is not None:
        built = recording.cache.built_ns(result.tree.name)
        if built is None or built >= recording.started_ns:
            return
    from forklift.errors import ForkliftError
    from forklift.series.resultcache import store

    outcome = (exit_code, "".join(out.parts), "".join(err.parts))
    try:
        store(recording.cache, recording.key, recording.context, result.inputs, outcome, result.receipt)
    except (OSError, ForkliftError):  # a cache that cannot be written costs the next run its replay, not this one
        return
