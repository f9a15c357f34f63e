"""`forklift knobs`: the registry of the pinned tree, before and after the series (the edge: files, cache)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forklift.config import Config
from forklift.engines import engine_adapter
from forklift.fsio import tree_reader
from forklift.knobs.overlay import patched_registry
from forklift.knobs.registry import Registry, RegistryDiff, compare, registry
from forklift.series.apply import apply_series
from forklift.series.gate import configured_overlay, configured_series
from forklift.source.materialize import materialize


@dataclass(frozen=True)
class KnobReport:
    tree: Path
    pristine: Registry
    patched: Registry
    diff: RegistryDiff
    not_applied: list[str]  # patches that did not land (their knobs are missing from "patched")


def knob_report(config: Config, tree: Path | None = None) -> KnobReport:
    """Registries of the pinned pristine tree (or `tree`) and of it with the series and the overlay files."""

    adapter = engine_adapter(config.data.engine.kind)
    if tree is None:
        tree = materialize(config.data.upstream, config.root).path
    pristine = registry(tree, adapter)
    series = configured_series(config)
    results, overlay = apply_series(tree_reader(tree), series.patches, series.applier)
    patched = patched_registry(pristine, {**overlay.files, **configured_overlay(config)}, adapter)
    not_applied = [r.name for r in results if not r.applies]
    return KnobReport(tree, pristine, patched, compare(pristine, patched), not_applied)
