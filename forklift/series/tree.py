"""`forklift tree OUT`: the patched tree written out: pristine + series + file overlay, with a record.

Users build images from this tree (checkout, apply, copy the overlay in, build).
The core is pure (the changes the series and the overlay make, and the record);
the edge copies the pristine tree into a temporary sibling of OUT, writes the
changes there and renames it into place, so OUT is never half written.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

from forklift.errors import ForkliftError, UsageError
from forklift.fsio import Executable, Link, make_folder, unwritable
from forklift.series.apply import APPLIED, Overlay, Reader, apply_series
from forklift.series.files import OverlayRow, apply_overlay
from forklift.series.model import Series
from forklift.series.render import overlay_hash

RECORD = "FORKLIFT-TREE.json"


def patched_tree(series: Series, read: Reader, overlay_files: dict[str, bytes]) -> tuple[Overlay, list[OverlayRow]]:
    """The series and then the overlay files over `read`; a patch that does not land exactly (or at an
    offset) stops it, naming the patch: a tree is only written for a series that passes the gate."""
    results, overlay = apply_series(read, series.patches, series.applier)
    for result in results:
        if result.status not in APPLIED:
            raise ForkliftError(
                f"{result.name}: {result.status} on the pristine tree: no tree written (run `forklift check`)"
            )
    return overlay, apply_overlay(overlay, overlay_files)


def tree_record(
    pin: dict[str, Any], label: str, series: Series, overlay: Overlay, rows: list[OverlayRow]
) -> dict[str, Any]:
    """FORKLIFT-TREE.json: what the tree is made of, so an image built from it can say so."""
    changed = overlay.changed()
    return {
        "schema": 1,
        "pin": pin,
        "upstream": label,
        "root": series.root,
        "overlay_hash": overlay_hash(changed) if changed else None,
        "patches": [{"name": p.name, "sha256": series.digests.get(p.name, "")} for p in series.patches],
        "skipped": [
            {"name": s.name, "reason": s.reason, "sha256": series.digests.get(s.name, "")} for s in series.skipped
        ],
        "overlay_files": [{"path": r.path, "status": r.status, "sha256": r.sha256} for r in rows],
        "changed": sorted(changed),
    }


def write_tree(
    pristine: Path, out: Path, changes: dict[str, bytes | None], record: dict[str, Any], force: bool = False
) -> Path:
    """Write pristine + `changes` to `out` atomically (a temporary sibling renamed into place).

    A non-empty `out` is refused unless `force`; then it is replaced whole, never merged into.
    An `out` that cannot be written is one line naming it."""
    out = out.absolute()
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a folder")
    replacing = out.is_dir() and any(out.iterdir())
    if replacing and not force:
        raise UsageError(f"{out}: not empty (pass --force to replace it)")
    make_folder(out.parent)
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    except OSError as exc:
        raise unwritable(out, exc) from None
    try:
        tree = staging / "tree"
        shutil.copytree(pristine, tree, symlinks=True)
        for path, content in sorted(changes.items()):
            _write_entry(tree, path, content)
        (tree / RECORD).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        if replacing:
            old = staging / "old"
            os.rename(out, old)
            os.rename(tree, out)
        else:
            os.replace(tree, out)  # rename(2) replaces an empty folder
    except OSError as exc:
        raise unwritable(out, exc) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def _write_entry(tree: Path, path: str, content: bytes | None) -> None:
    """One changed path as GNU patch and git apply leave it: removed (with the folders it emptied),
    a symbolic link, or a file with its executable bit as the series says."""
    target = tree / path
    present = target.is_symlink() or target.exists()
    if target.is_symlink() or (content is None and present):
        target.unlink()  # never write through a link into somewhere else
    if content is None:
        for folder in target.parents if present else ():
            if folder == tree or any(folder.iterdir()):
                break
            folder.rmdir()
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, Link):
        os.symlink(os.fsdecode(bytes(content)), target)
        return
    with open(target, "wb") as handle:
        handle.write(content)
    mode = stat.S_IMODE(target.stat().st_mode)
    executable = isinstance(content, Executable)
    if executable != bool(mode & stat.S_IXUSR):  # the umask decides who may read, as for git
        os.chmod(target, mode | (mode & 0o444) >> 2 if executable else mode & ~0o111)
