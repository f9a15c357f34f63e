"""The knob registry before and after a flip, on the pristine trees and on the patched trees."""

from __future__ import annotations

from forklift.engines import EngineAdapter
from forklift.flip.report import KnobDelta
from forklift.knobs import Registry, compare
from forklift.knobs.overlay import patched_registry, pristine_registry
from forklift.source.cache import Cache
from forklift.source.materialize import Tree


def _delta(tree: str, before: Registry, after: Registry, pristine_after: Registry | None = None) -> KnobDelta:
    """Old vs new registry; for the patched trees also what the series itself adds on the new release."""
    diff = compare(before, after)
    own = compare(pristine_after, after) if pristine_after else None
    return KnobDelta(
        tree=tree,
        before=len(before.names),
        after=len(after.names),
        added=list(diff.added),
        removed=list(diff.removed),
        unregistered_before=len(before.unregistered),
        unregistered_after=len(after.unregistered),
        new_unregistered_reads=[str(r) for r in diff.introduced_unregistered],
        series_registers=list(own.added) if own else [],
        series_unregistered_reads=[str(r) for r in own.introduced_unregistered] if own else [],
    )


def knob_deltas(
    old: Tree,
    new: Tree,
    old_files: dict[str, bytes | None],
    new_files: dict[str, bytes | None],
    adapter: EngineAdapter,
    cache: Cache,
) -> tuple[list[KnobDelta], str | None]:
    """(pristine delta, patched delta), or a reason when the trees have no knob registry."""
    if not (old.path / adapter.registry_file).is_file() or not (new.path / adapter.registry_file).is_file():
        return [], f"not compared: no {adapter.registry_file} in the trees (not a {adapter.name} source tree)"
    before, after = pristine_registry(old, adapter, cache), pristine_registry(new, adapter, cache)
    patched_before = patched_registry(before, old_files, adapter)
    patched_after = patched_registry(after, new_files, adapter)
    return [_delta("pristine", before, after), _delta("patched", patched_before, patched_after, after)], None
