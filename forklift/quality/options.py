"""Bounds on suite options, checked when the options are made: before any server is contacted or launched."""

from __future__ import annotations

from forklift.errors import UsageError


def at_least(suite: str, minimums: dict[str, tuple[int | None, int]]) -> None:
    """UsageError naming the first option below its minimum; `minimums` maps option -> (value, minimum), None: unset."""
    for option, (value, minimum) in minimums.items():
        if value is not None and value < minimum:
            raise UsageError(f"{suite} {option} {value}: must be at least {minimum}")
