"""The edge of `forklift check` and `forklift patches-md`: materialize, read, check, write the receipt."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forklift.config import Config
from forklift.errors import ConfigError
from forklift.fsio import tree_reader, write_atomic
from forklift.receipts import new_receipt, receipts_folder, write_receipt
from forklift.series.check import CheckReport, check_series
from forklift.series.model import load_series
from forklift.series.render import patches_md


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
    """Rendered file diffs in the cache, one file each, keyed by what they depend on."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, key: str) -> str | None:
        try:
            return (self.folder / key[:2] / key).read_bytes().decode("utf-8", "surrogateescape")
        except FileNotFoundError:
            return None

    def __setitem__(self, key: str, text: str) -> None:
        write_atomic(self.folder / key[:2] / key, text)


@dataclass(frozen=True)
class GateResult:
    report: CheckReport
    receipt: Path


def run_check(config: Config, receipts_dir: Path | None = None, progress=None) -> GateResult:
    from forklift.source import default_cache, materialize

    series = load_series(config.series_dir)
    tree = materialize(config.data.upstream, config.root, progress=progress)
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
        compiled=CompiledMarkers(default_cache().root / "compiled"),
        applier=config.data.series.applier,
        diffs=CachedDiffs(default_cache().root / "diffs"),
    )
    receipt = new_receipt(
        "check",
        status="ok" if report.ok else "failed",
        pin=config.data.upstream.model_dump(),
        overlay_hash=report.overlay_hash,
        body=report.model_dump(),
    )
    path = write_receipt(receipt, receipts_folder(receipts_dir, config.path))
    return GateResult(report=report, receipt=path)


def write_patches_md(config: Config) -> Path:
    """Render PATCHES.md from the patch headers (the file `check` compares against)."""
    if config.patches_md is None:
        raise ConfigError(f"{config.path}: series.patches_md is empty: no PATCHES.md to write")
    series = load_series(config.series_dir)
    write_atomic(config.patches_md, patches_md(list(series.patches), list(series.retired)))
    return config.patches_md
