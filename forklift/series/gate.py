"""The edge of `forklift check` and `forklift patches-md`: materialize, read, check, write the receipt."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forklift.config import Config
from forklift.engines import engine_adapter
from forklift.errors import ConfigError, ForkliftError
from forklift.fsio import tree_reader, utf8_text, write_atomic
from forklift.receipts import new_receipt, receipts_folder, write_receipt
from forklift.receipts.store import read_receipt
from forklift.series.check import CheckReport, Finding, Published, check_series
from forklift.series.diff import PatchError
from forklift.series.digests import parse_sums
from forklift.series.files import read_overlay
from forklift.series.lint import lint_series
from forklift.series.model import Series, load_series, read_series_part
from forklift.series.render import series_patches_md
from forklift.series.resultcache import recorded_inputs
from forklift.series.tree import patched_tree, tree_record, write_tree
from forklift.source.cache import default_cache
from forklift.source.hashing import file_sha256
from forklift.source.materialize import materialize, pinned_reader
from forklift.source.requirements import EngineRequirements, read_requirements, requirement_changes

if TYPE_CHECKING:
    from rich.console import Console


class CompiledMarkers:
    """Contents known to byte-compile, as empty marker files in the cache (keyed by content hash)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __contains__(self, key: object) -> bool:
        return (self.folder / str(key)).exists()

    def add(self, key: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / key).touch()


class CachedDiffs:
    """Rendered file diffs in the cache, keyed by what they depend on, in one SQLite file.

    A cold check renders one per touched file (1,585 for glibc's series): `save` writes them together, in
    one transaction and without a sync to disk (a file apiece cost a file creation each, most of a cold
    check). Each row carries the sha256 of its diff, so one a crash left torn is recomputed, never trusted;
    a file that is no database is replaced, and a cache that cannot be written only costs the next check
    its memo."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.new: dict[str, bytes] = {}  # rendered since the last save
        self._db: sqlite3.Connection | None = None
        self._broken = False

    def get(self, key: str) -> bytes | None:
        db = self._open()
        try:
            row = db.execute("SELECT sha256, body FROM diffs WHERE key = ?", (key,)).fetchone() if db else None
        except sqlite3.Error:
            return None
        if row is None or hashlib.sha256(row[1]).hexdigest() != row[0]:
            return None
        return bytes(row[1])

    def __setitem__(self, key: str, text: bytes) -> None:
        self.new[key] = text

    def save(self) -> None:
        rows = [(key, hashlib.sha256(body).hexdigest(), body) for key, body in self.new.items()]
        self.new.clear()
        db = self._open() if rows else None
        if db is None:
            return
        try:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT OR REPLACE INTO diffs VALUES (?, ?, ?)", rows)
            db.execute("COMMIT")
        except sqlite3.Error:
            return
        finally:
            db.close()
            self._db = None

    def _open(self) -> sqlite3.Connection | None:
        for _ in range(2 if self._db is None and not self._broken else 0):
            try:
                self._db = self._connect()
            except (sqlite3.OperationalError, OSError):  # locked past the timeout, or a folder not writable
                break
            except sqlite3.DatabaseError:  # not a database, or a damaged one: start it again
                with contextlib.suppress(OSError):
                    self.path.unlink(missing_ok=True)
                continue
            break
        self._broken = self._db is None
        return self._db

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.execute("PRAGMA synchronous = OFF")  # each row checks itself (above)
        db.execute("CREATE TABLE IF NOT EXISTS diffs (key TEXT PRIMARY KEY, sha256 TEXT NOT NULL, body BLOB)")
        return db


@dataclass(frozen=True)
class GateResult:
    report: CheckReport
    receipt: Path
    tree: Path | None  # the pristine tree in the cache; None for a folder pin read where it lies
    inputs: dict[str, Any] | None  # what the check read beyond forklift.toml (series/resultcache.py); None: git pin


def configured_series(config: Config, empty: bool = False) -> Series:
    """The series as forklift.toml configures it: its folder, patch root, unlisted-file rule and applier
    (an `empty` one read as such: a flip or export may move a fork before its first patch)."""
    conf = config.data.series
    return load_series(config.series_dir, unlisted=conf.unlisted, root=conf.root, applier=conf.applier, empty=empty)


def configured_overlay(config: Config) -> dict[str, bytes]:
    """The `[overlay] dir` files by tree path (below the patch root), or none."""
    folder = config.overlay_dir
    return read_overlay(folder, config.data.series.root) if folder is not None else {}


def published_digests(config: Config, series: Series) -> Published | None:
    """The SHA256SUMS the patch files are held to: `[series] digests`, else one beside `series` if present."""
    path = config.digests_file
    if not path.exists():
        if config.data.series.digests:
            raise ConfigError(f"{path}: no such file (series.digests in forklift.toml)")
        return None
    # a folder or a device named SHA256SUMS is refused, not taken as "no digests published"
    sums = parse_sums(utf8_text(read_series_part(path, "SHA256SUMS"), path, "SHA256SUMS", PatchError), path)
    actual = {name: file_sha256(path.parent / name) if (path.parent / name).is_file() else None for name in sums}
    # every applied patch must be published; a skipped one is held to its line only when listed
    required = [os.path.relpath(series.folder / p.name, path.parent).replace(os.sep, "/") for p in series.patches]
    return Published(where=path, sums=sums, actual=actual, required=required)


def run_check(
    config: Config, receipts_dir: Path | None = None, progress: Console | None = None, verify_cache: bool = False
) -> GateResult:
    """`verify_cache` re-hashes every cached file the check reads (`forklift check --verify-cache`)."""

    series = configured_series(config)
    overlay_files = configured_overlay(config)
    published = published_digests(config, series)
    cache = default_cache(verify=verify_cache)
    tree, read = pinned_reader(config.data.upstream, config.root, cache=cache, progress=progress)
    committed = None
    if config.patches_md is not None and config.patches_md.exists():
        committed = config.patches_md.read_text(encoding="utf-8")
    diffs = CachedDiffs(cache.root / "diffs.sqlite")
    report = check_series(
        series,
        read,
        list(config.data.series.contract),
        tree=tree.label,
        digest=tree.digest,
        committed_patches_md=committed,
        compiled=CompiledMarkers(cache.root / "compiled"),
        overlay_files=overlay_files,
        published=published,
        diffs=diffs,
    )
    diffs.save()
    if config.data.series.lint:  # off unless [series] lint = true: a series moving in gets a first clean-up
        report.findings += [
            Finding(check="lint", subject=f.patch, message=f"{f.rule}: {f.message}") for f in lint_series(series)
        ]
    folder = receipts_folder(receipts_dir, config.path)
    with_requirements(report, config, tree.path, folder)
    receipt = new_receipt(
        "check",
        status="ok" if report.ok else "failed",
        pin=config.data.upstream.model_dump(),
        overlay_hash=report.overlay_hash,
        body=report.model_dump(),
    )
    path = write_receipt(receipt, folder)
    inputs = recorded_inputs(config, series, published, tree)
    return GateResult(report=report, receipt=path, tree=None if tree.in_place else tree.path, inputs=inputs)


LOOKBACK = 200  # check receipts read, newest first, for the last check of another pin


def with_requirements(report: CheckReport, config: Config, tree: Path, receipts: Path) -> None:
    """The pinned engine's requirements into `report`, and what changed since the last check of another pin
    in `receipts` (a note per change that makes a kernel cache cold, one for the rest)."""
    kind = config.data.engine.kind
    adapter = engine_adapter(kind) if kind != "generic" else None
    report.requirements = read_requirements(tree, adapter)
    pin = config.data.upstream.model_dump()
    earlier = sorted(receipts.glob("*-check-*.json"), reverse=True)[:LOOKBACK] if receipts.is_dir() else []
    for path in earlier:
        try:
            receipt = read_receipt(path)
            stated = receipt.body.get("requirements")
            if receipt.pin == pin or not stated:
                continue
            before = EngineRequirements.model_validate(stated)
        except (ForkliftError, ValueError):
            continue  # an unreadable or foreign receipt says nothing about an earlier pin
        if report.requirements is None:
            break
        report.requirements_since = str(receipt.body.get("tree") or path.name)
        report.requirement_changes = requirement_changes(before, report.requirements, adapter)
        rest = [c for c in report.requirement_changes if not c.cache]
        since = f"since {report.requirements_since} (checked {receipt.created:%Y-%m-%d})"
        report.notes += [f"{since}: requirement {c.describe()}" for c in report.requirement_changes if c.cache]
        if rest:
            names = ", ".join(c.name.partition(";")[0] for c in rest[:8]) + (" ..." if len(rest) > 8 else "")
            report.notes.append(f"{since}: {len(rest)} other requirement(s) changed: {names} (--json lists each)")
        break


def write_patches_md(config: Config) -> Path:
    """Render PATCHES.md from the patch headers (the file `check` compares against)."""
    if config.patches_md is None:
        raise ConfigError(f"{config.path}: series.patches_md is empty: no PATCHES.md to write")
    write_atomic(config.patches_md, series_patches_md(configured_series(config)))
    return config.patches_md


def run_tree(
    config: Config, out: Path, force: bool = False, progress: Console | None = None
) -> tuple[Path, dict[str, Any]]:
    """`forklift tree OUT`: the pinned tree with the series and the overlay, written to OUT with its record."""

    series = configured_series(config)
    overlay_files = configured_overlay(config)
    tree = materialize(config.data.upstream, config.root, progress=progress)
    overlay, rows = patched_tree(series, tree_reader(tree.path), overlay_files)
    record = tree_record(config.data.upstream.model_dump(), tree.label, series, overlay, rows)
    return write_tree(tree.path, out, overlay.files, record, force=force), record
