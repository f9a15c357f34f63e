"""Synthetic lengths as a user writes them: `IN:OUT` tokens, each a count or a range drawn per prompt.

Kept apart from the workload builders (which pull aiohttp) so the CLI can check the flag before anything
heavier loads.
"""

from __future__ import annotations

import re

from forklift.errors import UsageError

LENGTH = re.compile(r"(\d{1,9})(?:-(\d{1,9}))?", re.ASCII)
Span = tuple[int, int]  # a length: fixed (low == high) or drawn uniformly from low to high per prompt
MAX_TOKENS = 10_000_000  # past any model's window: a typo, not a workload


def parse_lengths(text: str, where: str) -> tuple[Span, Span]:
    """`IN:OUT`, each a count (128) or a range drawn per prompt (64-256), as one line naming `where` if bad."""
    spans: list[Span] = []
    for part in text.split(":") if text.count(":") == 1 else []:
        found = LENGTH.fullmatch(part.strip(" "))
        if found is None:
            break
        span = (int(found[1]), int(found[2] or found[1]))
        if not 1 <= span[0] <= span[1] <= MAX_TOKENS:
            break
        spans.append(span)
    if len(spans) != 2:
        raise UsageError(
            f"{where} {text!r}: expected IN:OUT tokens, each a count or a range LOW-HIGH from 1 to {MAX_TOKENS:,}, "
            "e.g. 128:512 or 64-256:128"
        )
    return spans[0], spans[1]


def span_text(span: Span) -> str:
    return str(span[0]) if span[0] == span[1] else f"{span[0]}-{span[1]}"
