"""The exact patch engine: apply hunks at fuzz 0 and say, per hunk, how each one landed.

Pure functions over bytes. A hunk lands `exact` (at its stated line),
at an `offset` (its full context found N lines away, like GNU patch and git
apply), `already-applied` (its result is already there: the patch reverse-
applies), `fuzz` (only with context lines dropped: the gate fails), or
`fails`. A patch is applied whole or not at all (like git apply).

Tests cross-check these verdicts against `git apply --check` and
`patch --dry-run --fuzz 0` on the same inputs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from forklift.fsio import Reader
from forklift.series.model import FilePatch, Hunk, Patch

HunkStatus = Literal["exact", "offset", "fuzz", "already-applied", "fails"]
PatchStatus = Literal["exact", "offset", "fuzz", "already-applied", "partly-applied", "file-missing", "fails"]

MAX_FUZZ = 2
APPLIED = ("exact", "offset")


@dataclass(frozen=True)
class HunkResult:
    file: str
    index: int  # 1-based within its file, as patch and git number them
    status: HunkStatus
    offset: int = 0
    fuzz: int = 0
    line: int | None = None  # 1-based line of the original file where it landed
    stated: int = 0


@dataclass(frozen=True)
class FileProblem:
    file: str
    problem: Literal["missing", "exists", "differs"]

    def __str__(self) -> str:
        return {
            "missing": f"{self.file}: file not in the tree",
            "exists": f"{self.file}: file to create already exists with other content",
            "differs": f"{self.file}: file to delete has other content",
        }[self.problem]


@dataclass(frozen=True)
class PatchResult:
    name: str
    status: PatchStatus
    hunks: tuple[HunkResult, ...]
    problems: tuple[FileProblem, ...] = ()
    files: dict[str, bytes | None] = field(default_factory=dict)  # new contents when applied

    @property
    def applies(self) -> bool:
        return self.status in APPLIED


def split_lines(content: bytes) -> list[bytes]:
    """Lines with their endings, split on b"\\n" only (bytes.splitlines also splits on \\r, \\f...)."""
    parts = content.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _find(
    lines: list[bytes], block: tuple[bytes, ...], guess: int, floor: int, at_start: bool, at_end: bool
) -> int | None:
    """Position of `block` in `lines` at or after `floor`, nearest to `guess` (ties: later).

    `at_start`/`at_end` pin the block to the file's first/last line, as git
    and GNU patch do for hunks whose context stops at the file's edge.
    """
    n = len(block)
    if at_start or at_end:
        pos = 0 if at_start else len(lines) - n
        fits = pos >= floor and (not at_end or pos + n == len(lines))
        return pos if fits and lines[pos : pos + n] == list(block) else None
    if n == 0:
        return guess if floor <= guess <= len(lines) else None
    first, want = block[0], list(block)
    best = None
    for pos in range(floor, len(lines) - n + 1):
        if lines[pos] != first or lines[pos : pos + n] != want:
            continue
        # Nearest wins; on a tie the later one, as GNU patch tries forward before backward.
        if best is None or abs(pos - guess) <= abs(best - guess):
            best = pos
        else:
            break  # past the guess and moving away: nothing nearer follows
    return best


def _window(hunk: Hunk, fuzz: int) -> tuple[int, int, bool, bool]:
    """Context lines to drop (leading, trailing) at this fuzz, and whether the hunk is pinned to the
    file's start or end. GNU patch pins the side with less context than the other (it must be the
    file's edge); git also pins a hunk stated at line 1, and one with no trailing context."""
    lead, trail = hunk.leading_context, hunk.trailing_context
    context = max(lead, trail)
    drop_lead, drop_trail = fuzz + lead - context, fuzz + trail - context
    at_start = drop_lead < 0 or (fuzz == 0 and hunk.old_start <= 1)
    at_end = drop_trail < 0 or (fuzz == 0 and trail == 0 and bool(hunk.old))
    return min(max(drop_lead, 0), lead), min(max(drop_trail, 0), trail), at_start, at_end


def _place(lines: list[bytes], hunk: Hunk, guess: int, floor: int, file: str, index: int):
    """Where and how one hunk lands: (HunkResult, position, old block, new block); position None if nowhere."""
    stated = hunk.old_start if hunk.old else hunk.old_start + 1
    _, _, at_start, at_end = _window(hunk, 0)
    pos = _find(lines, hunk.old, guess, floor, at_start, at_end)
    if pos is not None:
        offset = pos - (stated - 1)
        status = "exact" if offset == 0 else "offset"
        return HunkResult(file, index, status, offset, 0, pos + 1, stated), pos, hunk.old, hunk.new
    if hunk.old and hunk.new:
        back = _find(lines, hunk.new, guess, floor, at_start, at_end)
        if back is not None:
            result = HunkResult(file, index, "already-applied", back - (stated - 1), 0, back + 1, stated)
            return result, back, None, hunk.new
    for fuzz in range(1, MAX_FUZZ + 1):
        lead, trail, at_start, at_end = _window(hunk, fuzz)
        old = hunk.old[lead : len(hunk.old) - trail]
        new = hunk.new[lead : len(hunk.new) - trail]
        if not old:
            break  # nothing left to anchor on: fuzz cannot place this hunk
        pos = _find(lines, old, guess + lead, floor, at_start, at_end)
        if pos is not None:
            offset = pos - lead - (stated - 1)
            return HunkResult(file, index, "fuzz", offset, fuzz, pos + 1, stated), pos, old, new
    return HunkResult(file, index, "fails", 0, 0, None, stated), None, None, None


def apply_hunks(content: bytes, file: str, hunks: Iterable[Hunk]) -> tuple[bytes, list[HunkResult]]:
    """Apply every hunk to `content`; returns the new content (of the landed hunks) and each verdict."""
    lines = split_lines(content)
    results: list[HunkResult] = []
    edits: list[tuple[int, int, tuple[bytes, ...]]] = []
    floor = 0
    last_offset = 0
    for index, hunk in enumerate(hunks, 1):
        start = hunk.old_start - 1 if hunk.old else hunk.old_start
        result, pos, old, new = _place(lines, hunk, max(start + last_offset, 0), floor, file, index)
        results.append(result)
        if pos is None:
            continue
        last_offset = result.offset
        if old is None:  # already applied: nothing to change, but later hunks come after it
            floor = pos + len(hunk.new)
            continue
        edits.append((pos, len(old), new))
        floor = pos + len(old)
    out: list[bytes] = []
    cursor = 0
    for pos, length, new in edits:
        out.extend(lines[cursor:pos])
        out.extend(new)
        cursor = pos + length
    out.extend(lines[cursor:])
    return b"".join(out), results


def _whole(lines: tuple[bytes, ...]) -> bytes:
    return b"".join(lines)


def apply_file(read: Reader, fp: FilePatch) -> tuple[dict[str, bytes | None], list[HunkResult], list[FileProblem]]:
    """One file's part of a patch: creation, deletion, rename or modification."""
    path = fp.path
    if fp.old_path is None:  # creation
        want = _whole(fp.hunks[0].new) if fp.hunks else b""
        current = read(path)
        if current is None:
            return {path: want}, [HunkResult(path, 1, "exact", stated=1, line=1)], []
        if current == want:
            return {}, [HunkResult(path, 1, "already-applied", stated=1, line=1)], []
        return {}, [HunkResult(path, 1, "fails", stated=1)], [FileProblem(path, "exists")]
    current = read(fp.old_path)
    if current is None:
        renamed = fp.new_path and fp.new_path != fp.old_path and read(fp.new_path) is not None
        if fp.new_path is None or renamed:
            return (
                {},
                [HunkResult(path, i, "already-applied", stated=h.old_start) for i, h in enumerate(fp.hunks, 1)],
                [],
            )
        return (
            {},
            [HunkResult(path, i, "fails", stated=h.old_start) for i, h in enumerate(fp.hunks, 1)],
            [FileProblem(fp.old_path, "missing")],
        )
    if fp.new_path is None:  # deletion: the whole old content must match
        want = _whole(fp.hunks[0].old) if fp.hunks else b""
        if current == want:
            return {fp.old_path: None}, [HunkResult(path, 1, "exact", stated=1, line=1)], []
        return {}, [HunkResult(path, 1, "fails", stated=1)], [FileProblem(path, "differs")]
    new, results = apply_hunks(current, path, fp.hunks)
    changes: dict[str, bytes | None] = {fp.new_path: new}
    if fp.old_path != fp.new_path:
        changes[fp.old_path] = None
    return changes, results, []


def _patch_status(hunks: list[HunkResult], problems: list[FileProblem]) -> PatchStatus:
    kinds = {h.status for h in hunks}
    if any(p.problem == "missing" for p in problems):
        return "file-missing"
    if kinds == {"already-applied"}:
        return "already-applied"
    if "fails" in kinds or problems:
        return "fails"
    if "already-applied" in kinds:
        return "partly-applied"
    if "fuzz" in kinds:
        return "fuzz"
    if "offset" in kinds:
        return "offset"
    return "exact"


def apply_patch(read: Reader, patch: Patch) -> PatchResult:
    """Apply one patch over `read` (pure). Its `files` hold the new contents when it applies."""
    changes: dict[str, bytes | None] = {}
    hunks: list[HunkResult] = []
    problems: list[FileProblem] = []

    def current(path: str) -> bytes | None:
        return changes[path] if path in changes else read(path)

    for fp in patch.files:
        file_changes, file_hunks, file_problems = apply_file(current, fp)
        changes.update(file_changes)
        hunks.extend(file_hunks)
        problems.extend(file_problems)
    status = _patch_status(hunks, problems)
    landed = status in APPLIED or status == "fuzz"
    return PatchResult(patch.name, status, tuple(hunks), tuple(problems), changes if landed else {})


@dataclass
class Overlay:
    """The series applied so far: new contents of every touched path over a pristine reader."""

    pristine: Reader
    files: dict[str, bytes | None] = field(default_factory=dict)

    def read(self, path: str) -> bytes | None:
        return self.files[path] if path in self.files else self.pristine(path)

    def changed(self) -> dict[str, tuple[bytes | None, bytes | None]]:
        """path -> (pristine, final) for paths whose content really differs."""
        out = {}
        for path in sorted(self.files):
            before, after = self.pristine(path), self.files[path]
            if before != after:
                out[path] = (before, after)
        return out


def apply_series(read: Reader, patches: Iterable[Patch]) -> tuple[list[PatchResult], Overlay]:
    """Apply patches in order; a patch that does not land leaves the overlay as it was."""
    overlay = Overlay(read)
    results = []
    for patch in patches:
        result = apply_patch(overlay.read, patch)
        overlay.files.update(result.files)
        results.append(result)
    return results, overlay
