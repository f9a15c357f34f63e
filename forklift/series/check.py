"""`forklift check`: the fail-closed gate over a series and a pristine tree (pure core).

Everything here is a plain function of the parsed series and a reader of
pristine file contents; series/gate.py materializes the tree and writes the receipt.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from forklift.errors import ConfigError
from forklift.series.apply import Overlay, PatchResult, Reader, apply_patch, apply_series
from forklift.series.digests import digest_problems
from forklift.series.files import OverlayRow, apply_overlay
from forklift.series.manifest import check_manifest
from forklift.series.model import Patch, Series, unrooted
from forklift.series.render import DiffMemo, diff_stat, is_generated, overlay_hash, series_patches_md
from forklift.source.requirements import EngineRequirements, RequirementChange


@dataclass(frozen=True)
class Published:
    """A sha256sum file, the sha256 now of each file it lists (None: missing), and the names it must list."""

    where: Path
    sums: dict[str, str]
    actual: dict[str, str | None]
    required: list[str]


CheckName = Literal[
    "pass1",
    "pass2",
    "whitespace",
    "compile",
    "patches-md",
    "nothing-changed",
    "manifest",
    "digests",
    "overlay",
    "lint",
    "deletes",
]
DELETES = "deletes"  # the header field naming the upstream files a patch removes on purpose


class HunkRow(BaseModel):
    file: str
    index: int
    status: str
    offset: int = 0
    fuzz: int = 0
    line: int | None = None
    stated: int = 0


class FileStat(BaseModel):
    path: str
    added: int
    removed: int


class PatchRow(BaseModel):
    name: str
    status: str
    sha256: str = ""  # of the patch file as it is in the folder
    kind: str = ""
    description: str = ""
    hunks: list[HunkRow] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    files: list[FileStat] = Field(default_factory=list)
    disagreements: list[str] = Field(default_factory=list)  # where the other applier's verdict differs


class SkippedRow(BaseModel):
    name: str
    reason: str
    after: int  # applied patches before it in the series
    sha256: str = ""


class Finding(BaseModel):
    check: CheckName
    subject: str
    message: str


class CheckReport(BaseModel):
    tree: str
    digest: str
    pass1: list[PatchRow]
    pass2: list[PatchRow]
    findings: list[Finding]
    overlay_hash: str | None
    touched: list[FileStat]  # files the overlay changes, with the +/- lines the series brings
    skipped: list[SkippedRow] = Field(default_factory=list)
    overlay_files: list[OverlayRow] = Field(default_factory=list)  # [overlay] dir, copied after the series
    notes: list[str] = Field(
        default_factory=list
    )  # worth a look, not a failure (unlisted files, hand-written PATCHES.md)
    requirements: EngineRequirements | None = None  # what the pinned engine declares (PKG-INFO, METADATA)
    requirements_since: str | None = None  # the pin of the last check of another pin, when there is one
    requirement_changes: list[RequirementChange] = Field(default_factory=list)  # from that pin to this one

    @property
    def ok(self) -> bool:
        return not self.findings


def _row(patch: Patch, result: PatchResult, digests: dict[str, str]) -> PatchRow:
    return PatchRow(
        name=patch.name,
        status=result.status,
        sha256=digests.get(patch.name, ""),
        kind=patch.header.get("kind"),
        description=patch.header.description,
        hunks=[HunkRow(**vars(h)) for h in result.hunks],
        problems=[str(p) for p in result.problems],
        files=[FileStat(path=f.path, added=f.added, removed=f.removed) for f in patch.files],
        disagreements=list(result.disagreements),
    )


def _explain(result: PatchResult) -> str:
    """Why a patch did not land exactly: the files and hunks that did not, with their verdict."""
    return f"{result.status}: " + "; ".join(result.reasons())


def whitespace_findings(patches: list[Patch], results: list[PatchResult]) -> list[Finding]:
    """git's default whitespace rules on added lines: blank at end of line, space before tab in indent,
    and blank lines added at the end of a file (where each hunk landed says which hunks end there)."""
    findings = []
    for patch, result in zip(patches, results, strict=True):
        landed = {(h.file, h.index): h for h in result.hunks}
        for fp in patch.files:
            for index, hunk in enumerate(fp.hunks, 1):
                problems = [_line_problem(line) for line in hunk.added] if _suspect(hunk.added) else []
                place = landed.get((fp.path, index))
                if hunk.blank_at_end and (fp.old_path is None or (place is not None and place.at_end)):
                    problems.append("new blank line at end of file")
                findings += [
                    Finding(check="whitespace", subject=patch.name, message=f"{fp.path} hunk #{index}: {problem}")
                    for problem in problems
                    if problem
                ]
    return findings


def _suspect(lines: tuple[bytes, ...]) -> bool:
    """Whether any added line may break a rule, from one look at them all (most hunks are clean; glibc's
    series adds 123,119 lines): trailing space, tab or CR before a line's end, or a space before a tab."""
    joined = b"\n".join(lines)  # a line's end is a newline here even where its own is missing
    return any(mark in joined for mark in (b" \n", b"\t\n", b"\r\n", b" \t")) or joined.endswith((b" ", b"\t", b"\r"))


def _line_problem(line: bytes) -> str:
    """blank-at-eol or space-before-tab in one added line, with the line quoted; '' when clean."""
    text = line.rstrip(b"\n")
    indent = text[: len(text) - len(text.lstrip(b" \t"))]
    if text != text.rstrip(b" \t\r"):  # a CR is trailing whitespace to git (cr-at-eol is not a default)
        problem = "trailing whitespace"
    elif b" \t" in indent:
        problem = "space before tab in indent"
    else:
        return ""
    return f"{problem} in added line {text.decode('utf-8', 'replace').strip()[:60]!r}"


class CompiledMemo(Protocol):
    """Contents already known to byte-compile (a set, or a folder of markers in the cache)."""

    def __contains__(self, key: object) -> bool: ...

    def add(self, key: str) -> None: ...


def compile_key(content: bytes) -> str:
    """What a successful compile depends on: the bytes and the Python that compiled them."""
    return hashlib.sha256(sys.version.encode() + b"\0" + content).hexdigest()


def compile_findings(overlay: Overlay, memo: CompiledMemo | None = None) -> list[Finding]:
    """Every .py file the series touched must still byte-compile (successes are remembered by content)."""
    memo = set() if memo is None else memo
    findings = []
    for path, content in sorted(overlay.files.items()):
        if not path.endswith(".py") or content is None:
            continue
        key = compile_key(content)
        if key in memo:
            continue
        try:
            compile(content, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:  # the last two: nested too deep
            where = f"{path}:{getattr(exc, 'lineno', '?')}"
            findings.append(
                Finding(
                    check="compile", subject=path, message=f"{where}: {type(exc).__name__}: {getattr(exc, 'msg', exc)}"
                )
            )
            continue
        memo.add(key)
    return findings


def deletion_findings(patches: list[Patch], read: Reader) -> list[Finding]:
    """A patch that deletes a file upstream ships, unless its header's `Deletes:` names it: a deletion
    slips past every other check (nothing fails to apply) and then reads as required work."""
    findings = []
    for patch in patches:
        declared = set(patch.header.get(DELETES).replace(",", " ").split())
        for fp in patch.files:
            path = fp.old_path
            if fp.new_path is not None or path is None or read(path) is None:
                continue
            if path not in declared and unrooted(path, patch.root) not in declared:
                findings.append(
                    Finding(
                        check="deletes",
                        subject=patch.name,
                        message=f"deletes the upstream file {path}: if that is intended, say "
                        f"`Deletes: {unrooted(path, patch.root)}` in the patch header",
                    )
                )
    return findings


def touched_files(
    changed: dict[str, tuple[bytes | None, bytes | None]], patches: list[Patch], whole: list[str] | None = None
) -> list[FileStat]:
    """Files the overlay touches, with the +/- lines the series adds and removes in each; a file an
    overlay file replaces (`whole`) counts its diff from the pristine file instead."""
    totals: dict[str, list[int]] = {path: [0, 0] for path in changed}
    for patch in patches:
        for fp in patch.files:
            if fp.path in totals:
                totals[fp.path][0] += fp.added
                totals[fp.path][1] += fp.removed
    for path in whole or []:
        if path in changed:
            totals[path] = list(diff_stat(*changed[path]))
    return [FileStat(path=p, added=a, removed=r) for p, (a, r) in sorted(totals.items())]


def check_series(
    series: Series,
    read: Reader,
    contract: list[str],
    tree: str = "",
    digest: str = "",
    committed_patches_md: str | None = None,
    compiled: CompiledMemo | None = None,
    overlay_files: dict[str, bytes] | None = None,
    published: Published | None = None,
    diffs: DiffMemo | None = None,
) -> CheckReport:
    """Run every check of the gate; the report's findings are empty only when all hold."""
    patches = list(series.patches)
    findings: list[Finding] = []
    require_contract(series, contract)
    read = functools.cache(read)  # the pristine tree does not change under a check: each file is read once

    applier = series.applier
    results, overlay = apply_series(read, patches, applier)
    pass1 = [_row(p, r, series.digests) for p, r in zip(patches, results, strict=False)]
    overlay_rows = apply_overlay(overlay, overlay_files or {})
    findings += [Finding(check="pass1", subject=r.name, message=_explain(r)) for r in results if not r.applies]

    pass2 = []
    for name in contract:
        patch = series.by_name(name)
        result = apply_patch(read, patch, applier)
        pass2.append(_row(patch, result, series.digests))
        if not result.applies:
            findings.append(
                Finding(check="pass2", subject=name, message="standalone on the pristine tree: " + _explain(result))
            )

    findings += whitespace_findings(patches, results)
    findings += deletion_findings(patches, read)
    findings += compile_findings(overlay, compiled)
    changed = overlay.changed()
    if not changed:
        findings.append(
            Finding(
                check="nothing-changed",
                subject=str(series.folder),
                message="the series changed no file of the tree (do its paths resolve?)",
            )
        )
    findings += [
        Finding(check="manifest", subject=lost.subject, message=lost.message)
        for lost in check_manifest(series.folder, patches, changed)
    ]
    notes = list(series.notes)
    if committed_patches_md is not None and committed_patches_md != series_patches_md(series):
        if is_generated(committed_patches_md):
            findings.append(
                Finding(
                    check="patches-md",
                    subject="PATCHES.md",
                    message="differs from a fresh render of the patch headers: run `forklift patches-md`",
                )
            )
        else:
            notes.append("PATCHES.md has no forklift marker (hand-written): not held to a fresh render")
    if published is not None:
        findings += [
            Finding(check="digests", subject=subject, message=f"{published.where.name}: {message}")
            for subject, message in digest_problems(published.sums, published.actual, published.required)
        ]
    findings += [
        Finding(check="overlay", subject=row.path, message="the overlay file is identical to the tree's: drop it")
        for row in overlay_rows
        if row.status == "same"
    ]
    return CheckReport(
        tree=tree,
        digest=digest,
        pass1=pass1,
        pass2=pass2,
        findings=findings,
        overlay_hash=overlay_hash(changed, diffs) if changed else None,
        touched=touched_files(changed, patches, [row.path for row in overlay_rows]),
        skipped=[
            SkippedRow(name=s.name, reason=s.reason, after=s.after, sha256=series.digests.get(s.name, ""))
            for s in series.skipped
        ],
        overlay_files=overlay_rows,
        notes=notes,
    )


def require_contract(series: Series, contract: list[str]) -> None:
    names = {p.name for p in series.patches}
    for name in contract:
        if name not in names:
            raise ConfigError(f"series.contract names {name!r}, which is not in {series.folder / 'series'}")
