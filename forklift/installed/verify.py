"""Verify an installed engine against its wheel RECORD and the series; apply the series to it, idempotently.

The wheel's RECORD holds the pristine hashes but not the pristine bytes. So the
pristine content of a patched file is recovered by undoing the applied patches
(last first) on the installed bytes; it must hash to RECORD, and applying the
series to it must give back exactly the installed bytes. Every package file
ends up in one state:

  pristine   the wheel's bytes, and the series does not touch it
  patched    the wheel's bytes plus exactly the series
  unpatched  the wheel's bytes where the series should have changed it
  modified   anything else (another series, a hand edit, a reverted half)
  missing    in RECORD, not on disk (and the series does not delete it)
  absent     the same, on an install declared trimmed (a wheel shipped without some of its
             files, e.g. unused kernels): counted and said, not a failure
  extra      on disk, not in RECORD (and the series does not create it)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from filelock import FileLock

from forklift.errors import ForkliftError
from forklift.fsio import write_atomic
from forklift.installed.package import InstalledPackage, sha256_hex
from forklift.series.apply import Overlay, apply_patch, apply_series
from forklift.series.diff import FilePatch, Hunk
from forklift.series.model import Patch, Series
from forklift.series.render import overlay_hash

FileState = Literal["pristine", "patched", "unpatched", "modified", "missing", "absent", "extra"]
PatchState = Literal["applied", "not-applied", "conflicts"]
GOOD = ("pristine", "patched", "absent")


@dataclass(frozen=True)
class FileCheck:
    path: str
    state: FileState
    why: str = ""


@dataclass(frozen=True)
class PatchCheck:
    name: str
    state: PatchState
    status: str  # the engine's verdict on the installed files


@dataclass
class Verification:
    package: InstalledPackage
    patches: list[PatchCheck]
    files: list[FileCheck]  # only files of interest: touched by the series, or not pristine
    checked: int  # package files compared
    touched: set[str] = field(default_factory=set)

    @property
    def problems(self) -> list[FileCheck]:
        return [f for f in self.files if f.state not in GOOD]

    @property
    def ok(self) -> bool:
        return not self.problems and all(p.state == "applied" for p in self.patches)

    @property
    def absent(self) -> int:
        return sum(f.state == "absent" for f in self.files)

    def summary(self) -> str:
        """One line: the first problem (a file, else a patch) and how many more files have one.

        Files merely missing are counted apart, after any other problem: a trimmed install misses
        hundreds, and listing the first of them would hide the one patch that is not applied.
        """
        problems = self.problems
        others = [f for f in problems if f.state != "missing"]
        missing = len(problems) - len(others)
        said = []
        if others:
            more = f" (+{len(others) - 1} more)" if len(others) > 1 else ""
            said.append(f"{others[0].path} {others[0].state}{more}")
        if missing:
            said.append(
                f"{missing} file(s) of the RECORD not on disk, e.g. {next(f.path for f in problems if f.state == 'missing')}"
                " (a trimmed install? --trimmed accepts absent files and checks the rest)"
            )
        if said:
            return "; ".join(said)
        return next((f"{p.name} {p.state}" for p in self.patches if p.state != "applied"), "ok")


def reverse(patch: Patch) -> Patch:
    """The patch that undoes `patch` (hunks and file creation/deletion swapped)."""
    files = tuple(
        FilePatch(
            old_path=fp.new_path,
            new_path=fp.old_path,
            hunks=tuple(
                Hunk(
                    old_start=h.new_start,
                    new_start=h.old_start,
                    old=h.new,
                    new=h.old,
                    added=h.removed,
                    removed=h.added,
                    leading_context=h.leading_context,
                    trailing_context=h.trailing_context,
                )
                for h in fp.hunks
            ),
        )
        for fp in patch.files
    )
    return replace(patch, name=f"{patch.name} (reversed)", files=files)


def _undo_applied(package: InstalledPackage, series: Series) -> tuple[list[PatchCheck], Overlay]:
    """Each patch's state on the installed files, and those files with the applied patches undone."""
    forward, _ = apply_series(package.read, series.patches, series.applier)
    patches = [
        PatchCheck(
            p.name,
            "applied" if r.status == "already-applied" else "not-applied" if r.applies else "conflicts",
            r.status,
        )
        for p, r in zip(series.patches, forward, strict=True)
    ]
    # Undo the applied patches, last first: what is left should be the wheel's bytes.
    undone = Overlay(package.read)
    for patch, check in reversed(list(zip(series.patches, patches, strict=True))):
        if check.state == "applied":
            result = apply_patch(undone.read, reverse(patch), series.applier)
            if result.status in ("exact", "offset"):
                undone.files.update(result.files)
    return patches, undone


def installed_overlay_hash(package: InstalledPackage, series: Series) -> str | None:
    """The overlay hash of what the series changed in the installed files (None: none of it is there).

    Reads only the files the series touches, so it is cheap enough for every launch; it equals
    `forklift check`'s overlay hash when the whole series is applied to pristine files (verify proves that).
    """

    _, undone = _undo_applied(package, series)
    touched = {p for patch in series.patches for p in patch.paths}
    changed = {p: (undone.read(p), package.read(p)) for p in touched if undone.read(p) != package.read(p)}
    return overlay_hash(changed) if changed else None


def verify_installed(package: InstalledPackage, series: Series, trimmed: bool = False) -> Verification:
    """Every file's state; with `trimmed`, RECORD files not on disk (and untouched by the series) are absent."""
    read = package.read
    patches, undone = _undo_applied(package, series)
    _, expected = apply_series(undone.read, series.patches, series.applier)
    touched = {p for patch in series.patches for p in patch.paths}

    checks: list[FileCheck] = []
    on_disk = set(package.files())
    for path in sorted(touched | set(package.record) | on_disk):
        if path in touched:
            checks.append(_touched_state(path, read(path), undone.read(path), expected.read(path), package))
            continue
        if path not in package.record:
            checks.append(FileCheck(path, "extra", "not in the wheel's RECORD"))
        elif path not in on_disk:
            checks.append(FileCheck(path, "absent" if trimmed else "missing", "in the wheel's RECORD, not on disk"))
        else:
            want = package.record[path]
            if want is not None and package.sha256(path) != want:  # streamed: never a whole file held
                checks.append(FileCheck(path, "modified", "sha256 differs from the wheel's RECORD"))
    return Verification(package, patches, checks, checked=len(on_disk), touched=touched)


def _pristine_matches(path: str, content: bytes | None, package: InstalledPackage) -> bool:
    if path not in package.record:
        return content is None  # a file the series creates: absent from the wheel
    want = package.record[path]
    return content is not None and (want is None or sha256_hex(content) == want)


def _touched_state(
    path: str, installed: bytes | None, pristine: bytes | None, expected: bytes | None, package: InstalledPackage
) -> FileCheck:
    if not _pristine_matches(path, pristine, package):
        if installed is None:
            return FileCheck(path, "missing", "in the wheel's RECORD, not on disk")
        return FileCheck(path, "modified", "not the wheel's bytes, even with the series undone")
    if installed == expected:
        return FileCheck(path, "patched")
    if installed == pristine:
        return FileCheck(path, "unpatched", "the wheel's bytes: the series is not applied here")
    return FileCheck(path, "modified", "neither the wheel's bytes nor the series' result")


@dataclass(frozen=True)
class Applied:
    applied: list[str]  # patches written now
    already: list[str]  # patches found applied (left alone)
    written: list[str]  # files written or removed


def apply_installed(package: InstalledPackage, series: Series) -> Applied:
    """Apply the series to the installed files; patches already there are recognised, never applied twice.

    Refuses, writing nothing, when a file the series touches is not the wheel's bytes
    (plus any already-applied part of this series), or when a patch does not apply exactly.
    """
    with FileLock(str(package.site / f".forklift-{package.package}.lock")):
        state = verify_installed(package, series)
        for check in state.files:
            if check.path in state.touched and check.state in ("modified", "missing"):
                raise ForkliftError(
                    f"{package.site / check.path}: {check.state} ({check.why}); "
                    f"reinstall {package.distribution} before applying the series"
                )
        overlay = Overlay(package.read)
        applied, already = [], []
        for patch in series.patches:
            result = apply_patch(overlay.read, patch, series.applier)
            if result.status == "already-applied":
                already.append(patch.name)
            elif result.status in ("exact", "offset"):
                overlay.files.update(result.files)
                applied.append(patch.name)
            else:
                raise ForkliftError(
                    f"{patch.name}: {result.status} on the installed {package.package}; nothing written"
                )
        written = []
        for path, content in sorted(overlay.files.items()):
            if content == package.read(path):
                continue
            _write(package.site / path, content)
            written.append(path)
        return Applied(applied, already, written)


def _write(target: Path, content: bytes | None) -> None:
    """Replace the file atomically (never writing through a hard link) and drop its stale byte-code."""
    stem = target.stem
    cache = target.parent / "__pycache__"
    if cache.is_dir():
        for pyc in cache.glob(f"{stem}.*.pyc"):
            pyc.unlink(missing_ok=True)
    if content is None:
        target.unlink(missing_ok=True)
        return
    write_atomic(target, content, mode=target.stat().st_mode & 0o777 if target.exists() else 0o644)
