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
SMALL = 8  # below a run this long, difflib's own search is as quick as sampling


class _Matcher(difflib.SequenceMatcher[Hashable]):
    """difflib's matcher (no junk) with its longest-match search sampled: the same answer, found by looking
    at one line in K of the old side instead of every line, where a run of K lines or more exists."""

    a: Sequence[Hashable]  # set by difflib, not declared by its stubs
    b: Sequence[Hashable]
    b2j: dict[Hashable, list[int]]  # each new line's positions, ascending

    def find_longest_match(
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> difflib.Match:
        ahi = len(self.a) if ahi is None else ahi
        bhi = len(self.b) if bhi is None else bhi
        width = min(ahi - alo, bhi - blo) // 2
        while width >= SMALL:
            found = self._runs_of(width, alo, ahi, blo, bhi)
            if found[2] >= width:
                return difflib.Match(*found)
            width //= 2
        return super().find_longest_match(alo, ahi, blo, bhi)

    def _runs_of(self, width: int, alo: int, ahi: int, blo: int, bhi: int) -> tuple[int, int, int]:
        """The longest run (earliest in a, then in b, as difflib breaks ties) among those through a sampled line.

        A run of `width` lines or more holds one of every `width` consecutive old lines, so when the best
        found is that long, no run missed could be longer: it is difflib's answer."""
        a, b, b2j = self.a, self.b, self.b2j
        best = (alo, blo, 0)
        for i in range(alo + width - 1, ahi, width):
            for j in b2j.get(a[i], ()):
                if j < blo:
                    continue
                if j >= bhi:
                    break
                start = 0
                while i - start > alo and j - start > blo and a[i - start - 1] == b[j - start - 1]:
                    start += 1
                end = 1
                while i + end < ahi and j + end < bhi and a[i + end] == b[j + end]:
                    end += 1
                size, first = start + end, (i - start, j - start)
                if size > best[2] or (size == best[2] and first < best[:2]):
                    best = (*first, size)
        return best


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
    inner = _Matcher(None, old[head : len(old) - tail], new[head : len(new) - tail], autojunk=False)
    codes: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    codes += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in inner.get_opcodes()]
    if tail:
        codes.append(("equal", len(old) - tail, len(old), len(new) - tail, len(new)))
    return codes
