"""Errors that stop forklift with one line naming the culprit.

Exit codes are part of the contract CI scripts rely on: 0 everything holds,
1 a check failed (or the thing checked is broken), 2 bad usage or bad config.
Bottom layer: imports nothing from forklift.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError


class ForkliftError(Exception):
    """A failure whose message is one line: what went wrong and where."""

    exit_code = 1


class UnreachableError(ForkliftError):
    """The index, a download host or a git remote did not answer (the network, not the input)."""


class Interrupted(ForkliftError):
    """Ctrl-C cut a step that writes several things; the message says what is on disk now and, when
    something is left, the one command that finishes it. Exit 130 (128 + SIGINT), as shells expect."""

    exit_code = 130


class UsageError(ForkliftError):
    """Bad command-line usage or a bad forklift.toml: the user must fix their input."""

    exit_code = 2


class ConfigError(UsageError):
    """forklift.toml is invalid; the message names the file and the key."""


def key_path(parts: Iterable[object]) -> str:
    """A dotted key for a message; a part holding a line break or other control character is quoted,
    so the message stays one line (TOML's quoted keys may hold any character)."""
    return ".".join(str(part) if str(part).isprintable() else repr(str(part)) for part in parts)


def describe_error(error: Any, *, hide: Collection[str] = (), top: str = "value") -> str:
    """One readable phrase for one pydantic error: the dotted key and what was expected.

    `hide` drops location parts that are not keys (a discriminated union's tag); `top` names
    the whole input when the error has no key.
    """
    loc = key_path(part for part in error["loc"] if part not in hide) or top
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"{loc}: unknown key"
    if kind == "missing":
        return f"{loc}: missing (required)"
    return f"{loc}: {error['msg']} (got {error['input']!r})"


def validation_line(exc: ValidationError, *, every: bool = False, top: str = "value") -> str:
    """A pydantic ValidationError as one line: its first problem, or `every` problem joined by '; '."""
    errors = exc.errors()
    return "; ".join(describe_error(error, top=top) for error in (errors if every else errors[:1]))


INTERRUPT_ENV = "FORKLIFT_INTERRUPT_AT"
_passes: Counter[str] = Counter()


def interrupt_point(name: str) -> None:
    """Ctrl-C at exactly this point, when FORKLIFT_INTERRUPT_AT names it: the interrupt tests' event, never a race
    with wall time. The variable holds comma-separated `NAME` (its first pass) or `NAME@N` (its N-th pass). The
    process sends itself SIGINT, as a terminal's Ctrl-C does, so whatever handles the signal (Python's
    KeyboardInterrupt, asyncio's cancelling of the running task) handles this one; unset, it costs a lookup."""
    wanted = os.environ.get(INTERRUPT_ENV)
    if not wanted:
        return
    _passes[name] += 1
    if f"{name}@{_passes[name]}" in wanted.split(",") or (_passes[name] == 1 and name in wanted.split(",")):
        signal.raise_signal(signal.SIGINT)
