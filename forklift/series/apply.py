"""The exact patch engine: apply hunks at fuzz 0 by the rules of the distribution's applier.

Pure functions over bytes. Two rule sets, each the tool's own:

- `gnu-patch` (quilt, dpkg-source): GNU patch's locate_hunk. A hunk is looked
  for at its stated line plus the offset the previous hunk landed at, then
  +1, -1, +2, ... within what earlier hunks left unfrozen. A hunk with less
  leading than trailing context must sit at the file's start, but only when
  it is stated at line 1 or 0; one with less trailing context must sit at the
  end. A hunk with no old lines (diff -U0 insertion) lands where it says.
  A failing hunk does not stop the others (the patch still fails).
- `git-apply` (git apply, default options): apply.c's find_pos/match_fragment.
  Each hunk is searched from its new-side line in the image patched so far,
  +1, -1, +2, ...; a hunk stated at line 0 or 1 must match at the start, one
  without trailing context at the end (so -U0 hunks need --unidiff-zero, which
  forklift does not assume). A patch applies whole or not at all.

A hunk lands `exact`, at an `offset`, `already-applied` (its result is
already there: the patch reverse-applies), `fuzz` (only with context lines
dropped, as GNU patch would report: the gate fails) or `fails`. Every result
also says where the other applier disagrees, so a distribution running both
is warned. Tests hold verdicts, offsets and bytes to the real tools.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from forklift.config.schema import Applier
from forklift.fsio import Executable, Link, Reader, ThroughLink
from forklift.series.diff import FilePatch, Hunk, split_lines
from forklift.series.model import Patch

HunkStatus = Literal["exact", "offset", "fuzz", "already-applied", "fails"]
PatchStatus = Literal["exact", "offset", "fuzz", "already-applied", "partly-applied", "file-missing", "fails"]

APPLIERS: tuple[Applier, ...] = ("gnu-patch", "git-apply")
TOOL = {"gnu-patch": "GNU patch", "git-apply": "git apply"}
MAX_FUZZ = 2
APPLIED = ("exact", "offset")

__all__ = ["Applier", "Link", "Reader", "split_lines"]  # re-exported: the engine's callers use them with it


@dataclass(frozen=True)
class HunkResult:
    file: str
    index: int  # 1-based within its file, as patch and git number them
    status: HunkStatus
    offset: int = 0  # as the applier reports it (GNU: from the stated line; git: from its search start)
    fuzz: int = 0
    line: int | None = None  # 1-based line where it landed (GNU: of the original file; git: of the image)
    stated: int = 0
    at_end: bool = False  # landed with its old lines ending at the file's end (git's blank-at-eof reads it)

    def describe(self) -> str:
        """One line for a row or a report: 'f.py hunk #2 (line 40): needs fuzz 1'."""
        verdict = {
            "exact": "applies",
            "offset": f"applies at offset {self.offset:+d}",
            "fuzz": f"needs fuzz {self.fuzz}",
            "already-applied": "already applied",
            "fails": "does not apply",
        }[self.status]
        return f"{self.file} hunk #{self.index} (line {self.stated}): {verdict}"


ProblemKind = Literal[
    "missing", "exists", "differs", "symlink", "beyond-link", "binary", "binary-data", "empty", "names"
]


@dataclass(frozen=True)
class FileProblem:
    file: str
    problem: ProblemKind
    detail: str = ""  # "names": git apply's own reason

    def __str__(self) -> str:
        if self.problem == "names":
            return f"{self.file}: git apply refuses it: {self.detail}"
        return (
            f"{self.file}: "
            + {
                "missing": "file not in the tree",
                "exists": "file to create already exists",
                "differs": "file to delete has other content",
                "symlink": "is a symbolic link in the tree (GNU patch and git apply refuse to patch through it)",
                "beyond-link": "is beyond a symbolic link in the tree (git apply refuses it; GNU patch follows it)",
                "binary": "binary diff without data (git apply refuses it)",
                "binary-data": "git binary patch (forklift does not apply binary data; GNU patch refuses it too)",
                "empty": "empty patch file (quilt skips it; git apply refuses it: no valid patches in input)",
            }[self.problem]
        )


@dataclass(frozen=True)
class PatchResult:
    """One patch tried on a tree: the verdict, each hunk, and what landed.

    `files` holds the new contents when the patch applies (the series moves on
    with them); `landed` the contents from the hunks that did land, also when
    the patch does not (what GNU patch writes beside its .rej; git apply would
    write nothing): flip re-cuts a partly-upstream patch from it.
    `disagreements` say where the other applier's verdict differs.
    """

    name: str
    status: PatchStatus
    hunks: tuple[HunkResult, ...]
    problems: tuple[FileProblem, ...] = ()
    files: dict[str, bytes | None] = field(default_factory=dict)
    landed: dict[str, bytes | None] = field(default_factory=dict)
    applier: Applier = "gnu-patch"
    disagreements: tuple[str, ...] = ()

    @property
    def applies(self) -> bool:
        return self.status in APPLIED

    def reasons(self) -> tuple[str, ...]:
        """Why it does not apply exactly: its file problems, then each hunk that did not land
        (not the hunks of a file that already has a problem)."""
        out = [str(p) for p in self.problems]
        refused = {p.file for p in self.problems}
        out += [h.describe() for h in self.hunks if h.status not in APPLIED and h.file not in refused]
        return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class _FileOutcome:
    changes: dict[str, bytes | None]  # what the applier writes for this file (landed hunks)
    hunks: list[HunkResult]
    problems: list[FileProblem]


# --- hunk placement -------------------------------------------------------------------------


def _matches(lines: list[bytes], at: int, block: tuple[bytes, ...], skip_lead: int = 0, skip_trail: int = 0) -> bool:
    """Does `block` (less `skip_lead`/`skip_trail` lines) sit at 0-based `at` in `lines`?"""
    end = len(block) - skip_trail
    if at < 0 or at + end > len(lines):
        return False
    if skip_lead < end and lines[at + skip_lead] != block[skip_lead]:
        return False  # the common case while searching: one comparison
    return lines[at + skip_lead : at + end] == list(block[skip_lead:end])


def _gnu_locate(
    lines: list[bytes], hunk: Hunk, block: tuple[bytes, ...], fuzz: int, in_offset: int, frozen: int
) -> int | None:
    """GNU patch's locate_hunk: the 1-based line where `block` (the hunk's old or new side) starts."""
    n = len(lines)
    first = hunk.first
    pat = len(block)
    prefix, suffix = hunk.leading_context, hunk.trailing_context
    context = max(prefix, suffix)
    prefix_fuzz, suffix_fuzz = fuzz + prefix - context, fuzz + suffix - context
    guess = first + in_offset
    max_where = n - (pat - suffix_fuzz) + 1
    min_where = frozen + 1 - (prefix - prefix_fuzz)
    max_pos, max_neg = max_where - guess, guess - min_where
    max_offset = max(max_pos, max_neg)
    if not pat:
        return guess
    if guess <= max_neg:
        max_neg = guess - 1
    if prefix_fuzz < 0 and first <= 1:  # only the start of the file
        if suffix_fuzz < 0 and (pat != n or prefix < frozen):
            return None
        offset = 1 - guess
        if frozen <= prefix and offset <= max_pos and _matches(lines, 0, block, 0, max(suffix_fuzz, 0)):
            return 1
        return None
    prefix_fuzz = max(prefix_fuzz, 0)
    if suffix_fuzz < 0:  # only the end of the file
        offset = guess - (n - pat + 1)
        if offset <= max_neg and _matches(lines, n - pat, block, prefix_fuzz, 0):
            return guess - offset
        return None
    min_offset = guess - max_where if max_pos < 0 else guess - min_where if max_neg < 0 else 0
    for offset in range(min_offset, max_offset + 1):
        if offset <= max_pos and _matches(lines, guess + offset - 1, block, prefix_fuzz, suffix_fuzz):
            return guess + offset
        if offset <= max_neg and _matches(lines, guess - offset - 1, block, prefix_fuzz, suffix_fuzz):
            return guess - offset
    return None


def _git_find(lines: list[bytes], block: tuple[bytes, ...], pos: int, at_start: bool, at_end: bool) -> int | None:
    """git apply's find_pos: the 0-based line of the image where `block` matches, searched from
    `pos` alternately forward and back."""
    n, m = len(lines), len(block)
    if at_start:
        pos = 0
    elif at_end:
        pos = n - m
    if not 0 <= pos <= n:  # git compares unsigned: a negative line is past the end too
        pos = n

    def fits(at: int) -> bool:
        if at + m > n or (at_end and at + m != n) or (at_start and at):
            return False
        return _matches(lines, at, block)

    if fits(pos):
        return pos
    back, forward = pos, pos
    while back > 0 or forward < n:
        if forward < n:
            forward += 1
            if fits(forward):
                return forward
        if back > 0:
            back -= 1
            if fits(back):
                return back
    return None


def _gnu_hunks(content: bytes, file: str, hunks: Iterable[Hunk]) -> tuple[bytes, list[HunkResult]]:
    """GNU patch over one file: every hunk that lands is applied, the others fail."""
    lines = split_lines(content)
    results: list[HunkResult] = []
    edits: list[tuple[int, int, tuple[bytes, ...]]] = []  # (0-based start, lines removed, lines put)
    in_offset = frozen = 0
    for index, hunk in enumerate(hunks, 1):
        stated = hunk.first
        where = _gnu_locate(lines, hunk, hunk.old, 0, in_offset, frozen)
        if where is not None and where - 1 + hunk.leading_context >= frozen:  # else GNU: "misordered hunks"
            in_offset = where - stated
            status: HunkStatus = "exact" if in_offset == 0 else "offset"
            at_end = where - 1 + len(hunk.old) >= len(lines)
            results.append(HunkResult(file, index, status, in_offset, 0, where, stated, at_end))
            edits.append((where - 1, len(hunk.old), hunk.new))
            frozen = _frozen_after(hunk, where)
            continue
        results.append(_diagnose(lines, hunk, file, index, in_offset, frozen))
    return _edit(lines, edits, ended=True), results


def _frozen_after(hunk: Hunk, where: int) -> int:
    """GNU's last_frozen_line after applying `hunk` at `where`: up to its last changed old line."""
    return where - 1 + len(hunk.old) - hunk.trailing_context


def _diagnose(lines: list[bytes], hunk: Hunk, file: str, index: int, in_offset: int, frozen: int) -> HunkResult:
    """A hunk that does not land at fuzz 0: already there, landing with fuzz (as GNU would), or not at all."""
    stated = hunk.first
    if hunk.old and hunk.new:
        back = _gnu_locate(lines, hunk, hunk.new, 0, in_offset, frozen)
        if back is not None:
            return HunkResult(file, index, "already-applied", back - stated, 0, back, stated)
    for fuzz in range(1, min(MAX_FUZZ, max(hunk.leading_context, hunk.trailing_context)) + 1):
        where = _gnu_locate(lines, hunk, hunk.old, fuzz, in_offset, frozen)
        if where is not None:
            return HunkResult(file, index, "fuzz", where - stated, fuzz, where, stated)
    return HunkResult(file, index, "fails", 0, 0, None, stated)


def _git_hunks(content: bytes, file: str, hunks: Iterable[Hunk]) -> tuple[bytes, list[HunkResult]]:
    """git apply over one file: hunks go in order onto the image patched so far."""
    original = split_lines(content)
    image = list(original)
    results: list[HunkResult] = []
    for index, hunk in enumerate(hunks, 1):
        pos = hunk.new_start - 1 if hunk.new_start else 0
        at_start = hunk.old_start <= 1
        at_end = hunk.trailing_context == 0
        at = _git_find(image, hunk.old, pos, at_start, at_end)
        if at is None:
            diagnosed = _diagnose(original, hunk, file, index, 0, 0)
            results.append(replace(diagnosed, status="fails") if diagnosed.status in APPLIED else diagnosed)
            continue
        offset = at - pos
        status: HunkStatus = "exact" if offset == 0 else "offset"
        results.append(HunkResult(file, index, status, offset, 0, at + 1, hunk.first, at + len(hunk.old) >= len(image)))
        image[at : at + len(hunk.old)] = hunk.new
    return b"".join(image), results


def _edit(lines: list[bytes], edits: list[tuple[int, int, tuple[bytes, ...]]], ended: bool = False) -> bytes:
    """`lines` with each edit made; `ended`: a line without its newline that something follows gets one, as GNU
    patch writes it (a hunk adding one at the top of a file, its '\\ No newline' then true of no line)."""
    out: list[bytes] = []
    cursor = 0
    for pos, length, new in edits:
        out.extend(lines[cursor:pos])
        out.extend(new)
        cursor = pos + length
    out.extend(lines[cursor:])
    if ended:
        out[:-1] = [line if line.endswith(b"\n") else line + b"\n" for line in out[:-1]]
    return b"".join(out)


def apply_hunks(content: bytes, file: str, hunks: Iterable[Hunk], applier: Applier) -> tuple[bytes, list[HunkResult]]:
    """Apply every hunk to `content`: the new content (of the landed hunks) and each verdict."""
    return (_gnu_hunks if applier == "gnu-patch" else _git_hunks)(content, file, hunks)


# --- whole files ----------------------------------------------------------------------------


def _all(fp: FilePatch, status: HunkStatus) -> list[HunkResult]:
    return [HunkResult(fp.path, i, status, stated=h.first) for i, h in enumerate(fp.hunks, 1)] or [
        HunkResult(fp.path, 1, status, stated=1, line=1 if status in APPLIED else None)
    ]


def _result(fp: FilePatch, content: bytes, current: bytes | None = None) -> bytes:
    """The new content as the tree will hold it: a link, an executable (the mode the patch gives it,
    else the one it had) or a plain file."""
    if fp.symlink:
        return Link(content)
    executable = isinstance(current, Executable) if fp.new_mode is None else bool(fp.new_mode & 0o111)
    return Executable(content) if executable else bytes(content)


def _file(read: Reader, fp: FilePatch, applier: Applier) -> _FileOutcome:
    """One file's part of a patch under `applier`: creation, deletion, copy, rename or change."""
    git = applier == "git-apply"
    fp = fp if git else fp.as_gnu_reads_it(lambda path: read(path) is not None)
    path = fp.path
    if git and fp.git_refuses:
        return _FileOutcome({}, _all(fp, "fails"), [FileProblem(path, "names", fp.git_refuses)])
    if fp.binary:
        return _binary(read, fp, git)
    source = fp.old_path
    current = read(source if source is not None else path)
    if isinstance(current, Link) and not fp.symlink:
        return _FileOutcome({}, _all(fp, "fails"), [FileProblem(source or path, "symlink")])
    if git and isinstance(current, ThroughLink):
        return _FileOutcome({}, _all(fp, "fails"), [FileProblem(source or path, "beyond-link")])
    if source is None or (current is None and _creates(fp)):
        return _create(fp, current, git)
    if current is None:
        renamed = fp.rename and fp.new_path and fp.new_path != source and read(fp.new_path) is not None
        if fp.new_path is None or renamed:
            return _FileOutcome({}, _all(fp, "already-applied"), [])
        return _FileOutcome({}, _all(fp, "fails"), [FileProblem(source, "missing")])
    new, results = apply_hunks(current, path, fp.hunks, applier)
    if fp.new_path is None:  # deletion: what is left must be nothing
        if new == b"":
            return _FileOutcome({source: None}, results or _all(fp, "exact"), [])
        problems = [FileProblem(path, "differs")] if all(h.status in APPLIED for h in results) else []
        return _FileOutcome({source: new}, results or _all(fp, "fails"), problems)
    changes: dict[str, bytes | None] = {fp.new_path: _result(fp, new, current)}
    if source != fp.new_path and not fp.copy:
        changes[source] = None
    return _FileOutcome(changes, results, [])


def _creates(fp: FilePatch) -> bool:
    """A plain diff whose only hunk is @@ -0,0 on a missing file: GNU patch and git both create it."""
    return len(fp.hunks) == 1 and fp.hunks[0].old_start == 0 and not fp.hunks[0].old


def _create(fp: FilePatch, current: bytes | None, git: bool) -> _FileOutcome:
    """A new file. Declared new (/dev/null, `new file mode`) over an existing file: git refuses any,
    GNU patch one that is not empty (it patches an empty one)."""
    path = fp.path
    want = _result(fp, b"".join(fp.hunks[0].new) if fp.hunks else b"")
    if current is None:
        return _FileOutcome({path: want}, _all(fp, "exact"), [])
    if current == want:
        return _FileOutcome({}, _all(fp, "already-applied"), [])
    if git or current != b"":
        return _FileOutcome({}, _all(fp, "fails"), [FileProblem(path, "exists")])
    new, results = apply_hunks(current, path, fp.hunks, "gnu-patch")
    return _FileOutcome({path: _result(fp, new)}, results, [])


def _binary(read: Reader, fp: FilePatch, git: bool) -> _FileOutcome:
    """A binary stanza. Without data git refuses it; GNU patch creates an empty file, leaves an
    existing one as it is, and deletes one only if it is empty. Data: neither applies here."""
    path = fp.path
    if fp.binary == "data":
        return _FileOutcome({}, _all(fp, "fails"), [FileProblem(path, "binary-data")])
    if git:
        return _FileOutcome({}, _all(fp, "fails"), [FileProblem(path, "binary")])
    current = read(fp.old_path or path)
    if fp.old_path is None:
        if current is None:
            return _FileOutcome({path: b""}, _all(fp, "exact"), [])
        return _FileOutcome({}, _all(fp, "exact" if current == b"" else "fails"), [])
    if current is None:
        return _FileOutcome({}, _all(fp, "fails"), [FileProblem(fp.old_path, "missing")])
    if fp.new_path is None:
        if current == b"":
            return _FileOutcome({fp.old_path: None}, _all(fp, "exact"), [])
        return _FileOutcome({}, _all(fp, "fails"), [FileProblem(path, "differs")])
    return _FileOutcome({}, _all(fp, "exact"), [])


# --- whole patches and series ---------------------------------------------------------------


def _patch_status(hunks: list[HunkResult], problems: list[FileProblem]) -> PatchStatus:
    kinds = {h.status for h in hunks}
    if any(p.problem == "missing" for p in problems):
        return "file-missing"
    if kinds == {"already-applied"}:
        return "already-applied"
    if "fails" in kinds or problems:
        return "fails"
    if "fuzz" in kinds:  # a hunk that lands only with fuzz: the patch does not apply at fuzz 0
        return "fuzz"
    if "already-applied" in kinds:
        return "partly-applied"
    if "offset" in kinds:
        return "offset"
    return "exact"


def _run(read: Reader, patch: Patch, applier: Applier) -> PatchResult:
    changes: dict[str, bytes | None] = {}
    hunks: list[HunkResult] = []
    problems: list[FileProblem] = []

    def current(path: str) -> bytes | None:
        return changes[path] if path in changes else read(path)

    for fp in patch.files:
        outcome = _file(current, fp, applier)
        changes.update(outcome.changes)
        hunks.extend(outcome.hunks)
        problems.extend(outcome.problems)
    if not patch.files and applier == "git-apply":
        problems.append(FileProblem(patch.name, "empty"))
    status = _patch_status(hunks, problems)
    files = changes if status in APPLIED else {}
    return PatchResult(patch.name, status, tuple(hunks), tuple(problems), files, changes, applier)


def _disagreements(ours: PatchResult, theirs: PatchResult) -> tuple[str, ...]:
    """Where the other applier's verdict differs, hunk by hunk (or file by file)."""
    other = TOOL[theirs.applier]
    notes = []
    ours_by = {(h.file, h.index): h for h in ours.hunks}
    their_problems = {p.file: p for p in theirs.problems}
    for h in theirs.hunks:
        mine = ours_by.get((h.file, h.index))
        if mine is None or (mine.status in APPLIED) == (h.status in APPLIED):
            continue
        if h.file in their_problems:  # a whole-file refusal: say why, once
            notes.append(f"{other} would refuse it: {their_problems.pop(h.file)}")
            continue
        if h.status not in APPLIED and their_problems and not ours.problems:  # refused under another name
            notes.append(f"{other} would refuse it: {their_problems.pop(next(iter(their_problems)))}")
            continue
        verb = "would apply" if h.status in APPLIED else "would refuse"
        notes.append(f"{h.file} hunk #{h.index} (line {h.stated}): {other} {verb} this hunk")
    if not notes and ours.applies != theirs.applies:
        verb = "would apply" if theirs.applies else "would refuse"
        notes.append(f"{other} {verb} this patch" + (f" ({theirs.reasons()[0]})" if theirs.reasons() else ""))
    return tuple(dict.fromkeys(notes))


def apply_patch(read: Reader, patch: Patch, applier: Applier) -> PatchResult:
    """Apply one patch over `read` (pure) by `applier`'s rules, with the other applier's disagreements.

    The one entry point for check, flip and verify: the result carries the verdict, every hunk,
    the contents to move on with (`files`, when it applies) and what landed (`landed`, always)."""
    ours = _run(read, patch, applier)
    theirs = _run(read, patch, "git-apply" if applier == "gnu-patch" else "gnu-patch")
    return replace(ours, disagreements=_disagreements(ours, theirs))


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
            if before != after or type(before) is not type(after):
                out[path] = (before, after)
        return out


def apply_series(read: Reader, patches: Iterable[Patch], applier: Applier) -> tuple[list[PatchResult], Overlay]:
    """Apply patches in order; a patch that does not land leaves the overlay as it was."""
    overlay = Overlay(read)
    results = []
    for patch in patches:
        result = apply_patch(overlay.read, patch, applier)
        overlay.files.update(result.files)
        results.append(result)
    return results, overlay
