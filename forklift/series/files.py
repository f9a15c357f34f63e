"""File overlays: whole files copied over the tree after the series (`[overlay] dir`).

Some work is carried as whole files, not diffs: new modules a distribution
adds, or a file it replaces outright (rsynced into the tree before an image
build). The folder mirrors the tree below `[series] root`. Its files land after
the last patch, so they count in the overlay hash, the touched-files manifest
and the byte-compile check like the series' own changes.
"""

from __future__ import annotations

import hashlib
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from forklift.errors import ConfigError, ForkliftError
from forklift.fsio import Executable
from forklift.series.apply import Overlay, Reader
from forklift.series.render import diff_stat

OverlayStatus = Literal["new", "replaces", "same"]


class OverlayRow(BaseModel):
    """One overlay file in check's output: what it does to the tree the series left."""

    path: str  # tree path
    status: OverlayStatus
    sha256: str
    added: int
    removed: int


@dataclass(frozen=True)
class UpstreamDrift:
    """An overlay file whose upstream counterpart changed between two pins (it may hide that change)."""

    path: str
    added: int
    removed: int

    def __str__(self) -> str:
        return f"{self.path}: upstream changed it (+{self.added} -{self.removed}) and the overlay replaces it whole"


def read_overlay(folder: Path, root: str = "") -> dict[str, bytes]:
    """The overlay folder's files by tree path; a link or special file is one line naming it."""
    if not folder.is_dir():
        raise ConfigError(f"{folder}: no such folder (overlay.dir in forklift.toml)")
    files: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        mode = path.lstat().st_mode
        if stat.S_ISDIR(mode):
            continue
        rel = path.relative_to(folder).as_posix()
        if not stat.S_ISREG(mode):
            raise ForkliftError(f"{path}: overlay entries must be regular files (links and special files are refused)")
        content = path.read_bytes()  # with its own mode, as rsync -a copies it into the tree
        files[f"{root}/{rel}" if root else rel] = Executable(content) if mode & stat.S_IXUSR else content
    if not files:
        raise ConfigError(f"{folder}: the overlay folder is empty (overlay.dir in forklift.toml)")
    return files


def apply_overlay(overlay: Overlay, files: dict[str, bytes]) -> list[OverlayRow]:
    """Copy the files over the series' result; each row says what it did to the file there before."""
    rows = []
    for path, content in sorted(files.items()):
        before = overlay.read(path)
        status: OverlayStatus = "new" if before is None else "same" if before == content else "replaces"
        added, removed = diff_stat(before, content)
        rows.append(
            OverlayRow(
                path=path, status=status, sha256=hashlib.sha256(content).hexdigest(), added=added, removed=removed
            )
        )
        overlay.files[path] = content
    return rows


def upstream_drift(old: Reader, new: Reader, paths: list[str]) -> list[UpstreamDrift]:
    """Overlay files whose upstream counterpart differs between the old and the new pin, with its diff stat
    (a file new in the overlay that upstream adds too counts: the overlay now hides upstream's file)."""
    drift = []
    for path in sorted(paths):
        before, after = old(path), new(path)
        if before != after:
            drift.append(UpstreamDrift(path, *diff_stat(before, after)))
    return drift
