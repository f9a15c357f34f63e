"""Line matching between two versions of a file: difflib's opcodes, fast where files differ in a few places.

Rendering a diff (series.render) and triaging a patch against a new release (flip.triage) both read
what changed from one file's lines to another's; this is the one matcher they share.
"""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Sequence
from typing import TypeVar

Line = TypeVar("Line", bound=Hashable)  # str for rendering, bytes for triage: difflib matches either
Opcode = tuple[str, int, int, int, int]  # (tag, old start, old end, new start, new end), as difflib's


def line_opcodes(old: Sequence[Line], new: Sequence[Line]) -> list[Opcode]:
    """difflib's opcodes for old -> new, matching only the part between the common head and tail:
    whole-file matching is slow, and a patched file differs from upstream in a few places."""
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    inner = difflib.SequenceMatcher(None, old[head : len(old) - tail], new[head : len(new) - tail], autojunk=False)
    codes: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    codes += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in inner.get_opcodes()]
    if tail:
        codes.append(("equal", len(old) - tail, len(old), len(new) - tail, len(new)))
    return codes
