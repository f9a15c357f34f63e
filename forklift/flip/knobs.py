"""The knob registry before and after a flip, on the pristine trees and on the patched trees.

A patched tree differs from its pristine tree only in the files the series
changes, so its registry is the pristine registry with those files re-read:
no patched copy of the tree is written and the 7,000-file walk runs once per
release, not twice.
"""

from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from forklift.engines import EngineAdapter
from forklift.errors import ForkliftError
from forklift.flip.report import KnobDelta
from forklift.knobs import Read, Registry, compare, registry
from forklift.knobs.registry import bare_reads, registered_names


def _parse(content: bytes, path: str) -> ast.Module:
    try:
        return ast.parse(content, filename=path)
    except SyntaxError as exc:
        raise ForkliftError(f"{path}:{exc.lineno}: not valid Python after the series: {exc.msg}") from None


def patched_registry(pristine: Registry, files: dict[str, bytes | None], adapter: EngineAdapter) -> Registry:
    """The registry of pristine + `files` (path -> new content, None deleted), re-reading only those files."""
    names = set(pristine.names)
    if adapter.registry_file in files:
        content = files[adapter.registry_file]
        names = registered_names(_parse(content, adapter.registry_file), adapter.registry_dict) \
            if content is not None else set()
    reads = [r for r in pristine.bypass if r.path not in files]
    for path, content in files.items():
        if content is None or path == adapter.registry_file or not path.endswith(".py") \
                or not path.startswith(adapter.package + "/"):
            continue
        for name, line, how in bare_reads(_parse(content, path), adapter.env_prefix):
            reads.append(Read(name, path, line, how, False))
    reads = [Read(r.name, r.path, r.line, r.how, r.name in names) for r in reads]
    return Registry(pristine.root, tuple(sorted(names)), tuple(sorted(reads, key=lambda r: (r.path, r.line, r.name))))


def _delta(tree: str, before: Registry, after: Registry) -> KnobDelta:
    diff = compare(before, after)
    return KnobDelta(tree=tree, before=len(before.names), after=len(after.names), added=list(diff.added),
                     removed=list(diff.removed), unregistered_before=len(before.unregistered),
                     unregistered_after=len(after.unregistered),
                     new_unregistered_reads=[str(r) for r in diff.introduced_unregistered])


def knob_deltas(old: Path, new: Path, old_files: dict[str, bytes | None], new_files: dict[str, bytes | None],
                adapter: EngineAdapter) -> tuple[list[KnobDelta], str | None]:
    """(pristine delta, patched delta), or a reason when the trees have no knob registry."""
    if not (old / adapter.registry_file).is_file() or not (new / adapter.registry_file).is_file():
        return [], f"not compared: no {adapter.registry_file} in the trees (not a {adapter.name} source tree)"
    with ThreadPoolExecutor(2) as pool:  # file reads overlap; the parse is what remains
        before, after = pool.map(lambda tree: registry(tree, adapter), (old, new))
    return [_delta("pristine", before, after),
            _delta("patched", patched_registry(before, old_files, adapter), patched_registry(after, new_files, adapter))], None
