"""Triage a series on a new upstream release (pure): what still applies, what upstream took, what blocks what.

Every patch is tried in series order over a *best-effort* tree: the new
release plus whatever of the earlier patches lands (the files they create, the
hunks that apply), so a later patch is judged against the most faithful tree
and not against one where an earlier conflict dropped out whole.

Verdicts: exact, offset, fuzz (the gate refuses it), already upstream (every
hunk reverse-applies: retire it), partly upstream (some hunks are upstream's,
the rest apply), retire candidate (it does not apply, but its whole change is
upstream: every hunk's added lines are there and its removed lines gone, so
upstream took it and edited it since), partly upstream: re-cut (it does not
apply and most, not all, of what it adds is upstream: the hunks upstream has
are named for dropping and the lines it lacks are quoted, since those may be
the point of the patch), upstream has its own version (a file it creates now
ships, with other content), file gone, blocked by NAME, conflict.

The blocked rule: a hunk that fails is *blocked by* an earlier patch that did
not fully land when it reads a line that patch adds (in its context or removed
lines) and that line is missing from the best-effort tree, or when its file is
one that patch creates or renames to. A patch whose every failing hunk is
blocked is `blocked by` the first such patch, followed to its root (a chain A
-> B -> C names A, via B); one failing hunk of its own makes it a conflict.
"""

from __future__ import annotations

import difflib
import keyword
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from forklift.series.apply import Applier, FileProblem, HunkResult, Overlay, PatchResult, Reader, apply_patch
from forklift.series.diff import FilePatch, Hunk, split_lines
from forklift.series.lines import Opcode, line_opcodes
from forklift.series.model import Patch, split_header, unrooted
from forklift.series.render import file_diff

Verdict = Literal[
    "exact",
    "offset",
    "fuzz",
    "already-upstream",
    "partly-upstream",
    "recut",
    "retire-candidate",
    "upstream-own",
    "file-gone",
    "blocked",
    "conflict",
]
LANDED = ("exact", "offset", "already-upstream", "partly-upstream")  # the series carries it on the new release
BLOCKING = ("fuzz", "recut", "retire-candidate", "upstream-own", "file-gone", "blocked", "conflict")  # --write refuses
RETIRE_FRACTION = 0.8  # of a failing patch's added lines found upstream: upstream took it and edited it
SHOWN = 3  # lines of old and new text per conflict
LONG_CLASS = 50  # lines: a class body longer than this is not one hunk's "enclosing scope"


@dataclass(frozen=True)
class HunkEvidence:
    """One hunk (or one file's creation/deletion) on the new release, in a line a reviewer reads."""

    file: str
    index: int
    status: str  # exact offset fuzz already conflict blocked gone own-version
    text: str
    line: int | None = None  # conflicts: the old release's line upstream changed
    was: tuple[str, ...] = ()  # conflicts: up to 3 lines of the old release from that line
    now: tuple[str, ...] = ()  # conflicts: what the new release has there
    blocked_by: str | None = None


@dataclass(frozen=True)
class RetireEvidence:
    present: int  # added lines found in the new release's files
    total: int
    differing: tuple[tuple[str, str | None], ...]  # (the patch's line, upstream's nearest line) for the others
    upstream_hunks: tuple[str, ...] = ()  # 'file hunk #N' whose whole change the new release has
    whole: bool = False  # every hunk is upstream: retire the patch


@dataclass(frozen=True)
class PatchTriage:
    name: str
    verdict: Verdict
    hunks: tuple[HunkEvidence, ...]
    files: tuple[str, ...]
    blocked_by: str | None = None  # the root patch that keeps this one from applying
    via: str | None = None  # the earlier patch in between, when the chain is longer
    look: tuple[str, ...] = ()  # why a patch that applies still needs a human look
    retire: RetireEvidence | None = None
    refreshed: str | None = None  # the patch re-cut on the new tree (offset or partly upstream), for --write

    @property
    def landed(self) -> bool:
        return self.verdict in LANDED

    @property
    def problems(self) -> tuple[str, ...]:
        """The hunks that keep it from applying, one line each."""
        return tuple(f"{h.file} hunk #{h.index}: {h.text}" for h in self.hunks if h.status not in _FINE)


_FINE = ("exact", "offset", "already")


@dataclass
class _Unlanded:
    """What an earlier patch that did not fully land would have put in the tree."""

    root: str  # the patch at the start of its chain (itself unless it was blocked)
    lines: dict[str, set[bytes]] = field(default_factory=dict)  # file -> stripped added lines of failed hunks
    creates: set[str] = field(default_factory=set)


def _stripped(lines: Iterable[bytes]) -> list[bytes]:
    return [line.strip() for line in lines if line.strip()]


def _locate(lines: list[bytes], block: tuple[bytes, ...], guess: int) -> int | None:
    """Where `block` sits in `lines` (nearest the guess), for evidence only."""
    n = len(block)
    spots = [i for i in range(len(lines) - n + 1) if lines[i : i + n] == list(block)] if n else []
    return min(spots, key=lambda i: abs(i - guess)) if spots else None


def _text(lines: Iterable[bytes]) -> tuple[str, ...]:
    return tuple(line.decode("utf-8", "surrogateescape").rstrip("\n") for line in lines)


class _Diffs:
    """old-release vs new-release contents of one file, as difflib opcodes (cached: files repeat)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[bytes, bytes], list[Opcode]] = {}

    def opcodes(self, old: bytes, new: bytes) -> list[Opcode]:
        key = (old, new)
        if key not in self._cache:
            self._cache[key] = [op for op in line_opcodes(split_lines(old), split_lines(new)) if op[0] != "equal"]
        return self._cache[key]


def _changed_line(
    diffs: _Diffs, old: bytes, new: bytes, start: int, end: int
) -> tuple[int, tuple[str, ...], tuple[str, ...]] | None:
    """The first upstream change touching old lines [start, end): (old line, was, now), or None."""
    old_lines, new_lines = split_lines(old), split_lines(new)
    for _, i1, i2, j1, j2 in diffs.opcodes(old, new):
        if (i1 < end and i2 > start) or (i1 == i2 and start < i1 < end):
            first = max(i1, start)
            offset = first - i1
            return (
                first + 1,
                _text(old_lines[first : min(i2, first + SHOWN)]),
                _text(new_lines[j1 + offset : j2][:SHOWN]),
            )
    return None


_SCOPE = re.compile(rb"^(\s*)(?:async\s+def|def|class)\s+([A-Za-z_]\w*)")
_DEFINES = re.compile(rb"^\s*(?:async\s+def|def|class)\s+([A-Za-z_]\w*)|^([A-Za-z_]\w*)\s*[:=]", re.MULTILINE)
_IMPORTS = re.compile(rb"^\s*(?:from\s+\S+\s+)?import\s+([^\n#]+)", re.MULTILINE)
_NAME = re.compile(rb"[A-Za-z_]\w*")
_KEYWORDS = {word.encode() for word in keyword.kwlist}


def _scope(lines: list[bytes], at: int) -> tuple[str, int, int] | None:
    """The def/class enclosing old line index `at`: (its line as written, first index, end index)."""
    here = next((lines[i] for i in range(at, len(lines)) if lines[i].strip()), b"")
    indent = len(here) - len(here.lstrip())
    for i in range(min(at, len(lines) - 1), -1, -1):
        m = _SCOPE.match(lines[i])
        if m and len(m.group(1)) < indent:
            end = i + 1
            while end < len(lines) and (
                not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > len(m.group(1))
            ):
                end += 1
            if lines[i].lstrip().startswith(b"class") and end - i > LONG_CLASS:
                return None  # a long class body is a list of members: a change to one says nothing of another
            kind = lines[i].strip().split(b"(")[0].split(b":")[0].decode("utf-8", "replace")
            return kind, i, end
        text = lines[i].strip()
        if text and not text.startswith((b")", b"]", b"}")) and len(lines[i]) - len(lines[i].lstrip()) < indent:
            indent = len(lines[i]) - len(lines[i].lstrip())  # a block opener that is not a def: look further out
    return None


def _symbols(content: bytes) -> set[bytes]:
    """Names a Python file defines or imports at any level (a rough, fast reading)."""
    names = {a or b for a, b in _DEFINES.findall(content)} - _KEYWORDS
    for imported in _IMPORTS.findall(content):
        names |= {
            part.split()[-1] for part in imported.replace(b"(", b" ").replace(b")", b" ").split(b",") if part.split()
        }
    return names


def _look(
    fp: FilePatch, old: bytes | None, new: bytes | None, on_old: list[HunkResult], on_new: list[HunkResult | None]
) -> list[str]:
    """Why a hunk that applies needs a look: upstream changed its enclosing def/class, or removed a name it uses.

    `on_old` places each hunk on the old release, `on_new` on the new one (None: not applied there)."""
    if old is None or new is None or old == new or not fp.path.endswith(".py"):
        return []
    old_lines, new_lines = split_lines(old), split_lines(new)
    reasons = []
    for hunk, was, now in zip(fp.hunks, on_old, on_new, strict=False):
        if now is None or now.line is None or was.line is None:
            continue  # not applied on the new release (already there): nothing of upstream's to re-read
        change = next((i for i, line in enumerate(hunk.old) if line not in hunk.new), hunk.leading_context)
        scope = _scope(old_lines, was.line - 1 + change)
        if scope is None:
            continue  # at module level the hunk's own lines are all it reads, and they matched
        there = _scope(new_lines, now.line - 1 + change)
        before = old_lines[scope[1] : scope[2]]
        after = new_lines[there[1] : there[2]] if there else []
        if before != after:
            at = next(
                (i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b), min(len(before), len(after))
            )
            reasons.append(
                f"{fp.path} hunk #{was.index}: upstream changed `{scope[0]}` (line {scope[1] + 1}) "
                f"at line {scope[1] + at + 1}"
            )
    used = {name for hunk in fp.hunks for line in hunk.added for name in _NAME.findall(line)}
    own = _symbols(b"".join(line for hunk in fp.hunks for line in hunk.added))
    gone = sorted(n.decode() for n in (used & _symbols(old)) - _symbols(new) - own)
    if gone:
        reasons.append(f"{fp.path}: upstream removed {', '.join(f'`{n}`' for n in gone)}, which the patch uses")
    return reasons


def _retire(patch: Patch, new: Reader, intended: Reader, hunks: tuple[HunkResult, ...]) -> RetireEvidence | None:
    """How much of the patch the new release already has, hunk by hunk: a hunk is upstream when every
    line it adds is in the new file and every line it removes is gone (the new file holds it no more
    often than the patch's own result on the old release does), or when it reverse-applies. None
    when less than RETIRE_FRACTION of the added lines are there."""
    already = {(h.file, h.index) for h in hunks if h.status == "already-applied"}
    present, missing, upstream, every = 0, [], [], True
    for fp in patch.files:
        theirs = split_lines(new(fp.path) or b"")
        there = set(_stripped(theirs))
        counts_new, counts_meant = _counts(theirs), _counts(split_lines(intended(fp.path) or b""))
        for index, hunk in enumerate(fp.hunks, 1):
            added = _stripped(hunk.added)
            lacking = [line for line in added if line not in there]
            gone = all(counts_new.get(line, 0) <= counts_meant.get(line, 0) for line in set(_stripped(hunk.removed)))
            present += len(added) - len(lacking)
            missing += [(fp.path, line) for line in lacking]
            if (fp.path, index) in already or (not lacking and gone):
                upstream.append(f"{fp.path} hunk #{index}")
            else:
                every = False
    total = present + len(missing)
    if not total or (present < RETIRE_FRACTION * total and not every):
        return None
    differing = []
    for path, line in missing:
        upstream_lines = _stripped(split_lines(new(path) or b""))
        near = difflib.get_close_matches(line, upstream_lines, n=1, cutoff=0.6)
        differing.append((line.decode("utf-8", "replace"), near[0].decode("utf-8", "replace") if near else None))
    return RetireEvidence(present, total, tuple(differing), tuple(upstream), whole=every)


def _counts(lines: list[bytes]) -> dict[bytes, int]:
    counts: dict[bytes, int] = {}
    for line in _stripped(lines):
        counts[line] = counts.get(line, 0) + 1
    return counts


def _diffstat(want: bytes, have: bytes) -> str:
    plus = minus = 0
    for _, i1, i2, j1, j2 in _Diffs().opcodes(want, have):
        minus, plus = minus + i2 - i1, plus + j2 - j1
    return f"+{plus} -{minus} lines against the patch's"


class _Triage:
    """The walk over the series; one instance per flip."""

    def __init__(self, old: Reader, new: Reader, applier: Applier) -> None:
        self.new = new
        self.applier = applier
        self.old = Overlay(old)  # the series on the old release, as its author saw each patch's input
        self.best = Overlay(new)
        self.unlanded: dict[str, _Unlanded] = {}
        self.diffs = _Diffs()

    def _blocker(self, file: str, hunk: Hunk | None) -> str | None:
        """The earliest earlier patch that did not land whose work this hunk (or file) needs."""
        have = set(_stripped(split_lines(self.best.read(file) or b"")))
        for name, info in reversed(self.unlanded.items()):  # the nearest first: a chain names its last link
            if hunk is None and file in info.creates:
                return name
            if hunk is not None and any(
                line in info.lines.get(file, ()) and line not in have for line in _stripped(hunk.old)
            ):
                return name
        return None

    def _conflict(self, fp: FilePatch, hunk: Hunk, result: HunkResult, status: str) -> HunkEvidence:
        """Why a hunk fails (or needs fuzz): the first line of its span upstream changed, old vs new text."""
        old, new = self.old.read(fp.old_path or fp.path), self.best.read(fp.old_path or fp.path)
        verb = f"applies only with fuzz {result.fuzz}" if status == "fuzz" else "conflicts"
        if old is not None and new is not None:
            pos = _locate(split_lines(old), hunk.old, hunk.old_start - 1)
            changed = pos is not None and _changed_line(self.diffs, old, new, pos, pos + len(hunk.old))
            if changed:
                line, was, now = changed
                what = (
                    "upstream inserted lines at" if not was else "upstream deleted" if not now else "upstream changed"
                )
                return HunkEvidence(fp.path, result.index, status, f"{verb}: {what} line {line}", line, was, now)
        return HunkEvidence(fp.path, result.index, status, f"{verb}: its lines are not in the new release")

    def _evidence(
        self, patch: Patch, hunks: tuple[HunkResult, ...], problems: tuple[FileProblem, ...]
    ) -> tuple[HunkEvidence, ...]:
        by_file = {fp.path: fp for fp in patch.files}
        trouble = {p.file: p for p in problems}
        out: list[HunkEvidence] = []
        for r in hunks:
            fp = by_file.get(r.file) or next(f for f in patch.files if r.file in (f.old_path, f.new_path))
            problem = trouble.get(r.file) or trouble.get(fp.old_path or "")
            if problem is not None and problem.problem == "missing":
                blocker = self._blocker(problem.file, None)
                if blocker:
                    out.append(
                        HunkEvidence(
                            r.file, r.index, "blocked", f"needs the file {blocker} creates", blocked_by=blocker
                        )
                    )
                else:
                    out.append(HunkEvidence(r.file, r.index, "gone", "the file is gone upstream"))
            elif problem is not None and problem.problem == "exists":
                have = self.best.read(r.file) or b""
                want = b"".join(fp.hunks[0].new) if fp.hunks else b""
                out.append(
                    HunkEvidence(
                        r.file, r.index, "own-version", f"upstream has its own version: {_diffstat(want, have)}"
                    )
                )
            elif problem is not None:
                out.append(HunkEvidence(r.file, r.index, "conflict", "the file to delete changed upstream"))
            elif r.status == "exact":
                out.append(
                    HunkEvidence(r.file, r.index, "exact", "applies exactly" if fp.old_path else "creates the file")
                )
            elif r.status == "offset":
                out.append(HunkEvidence(r.file, r.index, "offset", f"applies at {r.offset:+d}"))
            elif r.status == "already-applied":
                out.append(
                    HunkEvidence(
                        r.file, r.index, "already", f"already there (line {r.line})" if r.line else "already there"
                    )
                )
            else:
                hunk = fp.hunks[r.index - 1]
                blocker = self._blocker(fp.old_path or fp.path, hunk) if r.status == "fails" else None
                if blocker:
                    out.append(
                        HunkEvidence(r.file, r.index, "blocked", f"reads lines {blocker} adds", blocked_by=blocker)
                    )
                else:
                    out.append(self._conflict(fp, hunk, r, "fuzz" if r.status == "fuzz" else "conflict"))
        return tuple(out)

    def _verdict(
        self, result: PatchResult, evidence: tuple[HunkEvidence, ...], patch: Patch, intended: Reader
    ) -> tuple[Verdict, RetireEvidence | None]:
        status, kinds = result.status, {h.status for h in evidence}
        if status == "fuzz" or (status == "fails" and kinds & {"conflict", "fuzz", "already"}):
            # it does not land as written: upstream may have taken it, whole or in part, and edited it since
            retire = _retire(patch, self.new, intended, result.hunks)
            if retire is not None:
                return ("retire-candidate" if retire.whole else "recut"), retire
        if status == "fuzz":
            return "fuzz", None
        if status in ("exact", "offset"):
            return ("exact" if status == "exact" else "offset"), None
        if status == "already-applied":
            return "already-upstream", None
        if status == "partly-applied":
            return "partly-upstream", None
        if kinds - set(_FINE) == {"own-version"}:
            return "upstream-own", None
        ranked: tuple[tuple[Verdict, str], ...] = (
            ("conflict", "conflict"),
            ("conflict", "fuzz"),
            ("file-gone", "gone"),
        )
        for verdict, kind in ranked:
            if kind in kinds:
                return verdict, None
        return ("blocked", None) if "blocked" in kinds else ("conflict", None)

    def step(self, patch: Patch) -> PatchTriage:
        result = apply_patch(self.best.read, patch, self.applier)
        evidence = self._evidence(patch, result.hunks, result.problems)
        on_old = apply_patch(self.old.read, patch, self.applier)
        intended = Overlay(self.old.read, dict(on_old.files)).read  # what the author's patch makes of the old release
        verdict, retire = self._verdict(result, evidence, patch, intended)
        changes = dict(result.landed)  # all of it when it applies; else the files it creates and the hunks that apply
        look: list[str] = []
        if verdict in ("exact", "offset", "partly-upstream"):
            applied = {(h.file, h.index) for h in evidence if h.status in ("exact", "offset")}
            for fp in patch.files:
                was = [h for h in on_old.hunks if h.file == fp.path]
                now = [h if (h.file, h.index) in applied else None for h in result.hunks if h.file == fp.path]
                path = fp.old_path or fp.path
                look += _look(fp, self.old.read(path), self.best.read(path), was, now)
        blocked_by = via = None
        if verdict == "blocked":
            direct = next(h.blocked_by for h in evidence if h.blocked_by)
            blocked_by = self.unlanded[direct].root
            via = direct if direct != blocked_by else None
        refreshed = _recut(patch, self.best.read, changes) if verdict in ("offset", "partly-upstream") else None
        if verdict not in LANDED and verdict != "fuzz":
            self._remember(patch, evidence, blocked_by or patch.name)
        self.best.files.update(changes)
        self.old.files.update(on_old.files)  # the series applies on the old release, or check said so
        return PatchTriage(
            name=patch.name,
            verdict=verdict,
            hunks=evidence,
            files=patch.paths,
            blocked_by=blocked_by,
            via=via,
            look=tuple(look),
            retire=retire,
            refreshed=refreshed,
        )

    def _remember(self, patch: Patch, evidence: tuple[HunkEvidence, ...], root: str) -> None:
        info = _Unlanded(root=root)
        failed = {(h.file, h.index) for h in evidence if h.status not in _FINE}
        for fp in patch.files:
            if fp.old_path is None or (fp.new_path and fp.new_path != fp.old_path):
                info.creates.add(fp.path)
            for index, hunk in enumerate(fp.hunks, 1):
                if (fp.path, index) in failed:
                    info.lines.setdefault(fp.old_path or fp.path, set()).update(_stripped(hunk.added))
                    if fp.new_path and fp.new_path != fp.old_path:
                        info.lines.setdefault(fp.new_path, set()).update(_stripped(hunk.added))
        self.unlanded[patch.name] = info


def _recut(patch: Patch, before: Reader, changes: dict[str, bytes | None]) -> str:
    """The patch's header with its diff rendered afresh against the new tree (exact line numbers)."""
    header = split_header(patch.text)[0]
    body = "".join(
        file_diff(unrooted(path, patch.root), before(path), changes[path])
        for path in sorted(changes)
        if before(path) != changes[path]
    )
    return header + body


def triage(
    old: Reader, new: Reader, patches: list[Patch] | tuple[Patch, ...], applier: Applier
) -> tuple[list[PatchTriage], Overlay]:
    """Each patch's verdict on the new tree, in series order; returns the best-effort overlay too."""
    walk = _Triage(old, new, applier)
    return [walk.step(patch) for patch in patches], walk.best
