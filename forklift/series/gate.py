"""The edge of `forklift check` and `forklift patches-md`: materialize, read, check, write the receipt."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forklift.config import Config
from forklift.errors import ConfigError
from forklift.fsio import tree_reader, utf8_text, write_atomic
from forklift.receipts import new_receipt, receipts_folder, write_receipt
from forklift.series.check import CheckReport, Published, check_series
from forklift.series.diff import PatchError
from forklift.series.digests import parse_sums
from forklift.series.files import read_overlay
from forklift.series.model import Series, load_series, read_series_part
from forklift.series.render import series_patches_md
from forklift.series.resultcache import recorded_inputs
from forklift.series.tree import patched_tree, tree_record, write_tree
from forklift.source.cache import default_cache
from forklift.source.hashing import file_sha256
from forklift.source.materialize import materialize

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
    """Rendered file diffs in the cache, one file each, keyed by what they depend on.

    Each file starts with the sha256 of the diff after it: written without a sync to disk (a cold check
    writes one per touched file), a file a crash left torn or empty is recomputed, never trusted."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, key: str) -> str | None:
        try:
            raw = (self.folder / key[:2] / key).read_bytes()
        except FileNotFoundError:
            return None
        digest, _, body = raw.partition(b"\n")
        if hashlib.sha256(body).hexdigest().encode() != digest:
            return None
        return body.decode("utf-8", "surrogateescape")

    def __setitem__(self, key: str, text: str) -> None:
        body = text.encode("utf-8", "surrogateescape")
        record = hashlib.sha256(body).hexdigest().encode() + b"\n" + body
        write_atomic(self.folder / key[:2] / key, record, durable=False)


@dataclass(frozen=True)
class GateResult:
    report: CheckReport
    receipt: Path
    tree: Path  # the pristine tree in the cache
    inputs: dict[str, Any] | None  # what the check read beyond forklift.toml (series/resultcache.py); None: git pin


def configured_series(config: Config) -> Series:
    """The series as forklift.toml configures it: its folder, patch root, unlisted-file rule and applier."""
    conf = config.data.series
    return load_series(config.series_dir, unlisted=conf.unlisted, root=conf.root, applier=conf.applier)


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
    tree = materialize(config.data.upstream, config.root, cache=cache, progress=progress)
    committed = None
    if config.patches_md is not None and config.patches_md.exists():
        committed = config.patches_md.read_text(encoding="utf-8")
    report = check_series(
        series,
        tree_reader(tree.path),
        list(config.data.series.contract),
        tree=tree.label,
        digest=tree.digest,
        committed_patches_md=committed,
        compiled=CompiledMarkers(cache.root / "compiled"),
        overlay_files=overlay_files,
        published=published,
        diffs=CachedDiffs(cache.root / "diffs"),
    )
    receipt = new_receipt(
        "check",
        status="ok" if report.ok else "failed",
        pin=config.data.upstream.model_dump(),
        overlay_hash=report.overlay_hash,
        body=report.model_dump(),
    )
    path = write_receipt(receipt, receipts_folder(receipts_dir, config.path))
    inputs = recorded_inputs(config, series, published, tree)
    return GateResult(report=report, receipt=path, tree=tree.path, inputs=inputs)


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
