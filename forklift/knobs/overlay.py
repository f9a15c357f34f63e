"""Registries without patched copies: a patched tree's registry is its pristine registry with the
changed files re-read, and a pristine tree's registry is kept in the cache (trees there never change,
and the AST walk over ~2,000 modules is the slow part)."""

from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import asdict
from pathlib import Path

from forklift.engines import EngineAdapter
from forklift.fsio import write_atomic
from forklift.knobs.registry import (
    Read,
    Registry,
    bare_reads,
    may_read,
    parse_module,
    registered_names,
    registry,
)
from forklift.source.cache import Cache
from forklift.source.materialize import Tree

AFTER = " after the series"  # the files read here are the series' output, not the pinned tree's


def patched_registry(pristine: Registry, files: dict[str, bytes | None], adapter: EngineAdapter) -> Registry:
    """The registry of pristine + `files` (path -> new content, None deleted), re-reading only those files."""
    names = set(pristine.names)
    if adapter.registry_file in files:
        content = files[adapter.registry_file]
        names = (
            registered_names(parse_module(content, adapter.registry_file, AFTER), adapter.registry_dict)
            if content is not None
            else set()
        )
    reads = [r for r in pristine.bypass if r.path not in files]
    for path, content in files.items():
        if (
            content is None
            or path == adapter.registry_file
            or not path.endswith(".py")
            or not path.startswith(adapter.package + "/")
            or not may_read(content, adapter)
        ):
            continue
        for name, line, how in bare_reads(parse_module(content, path, AFTER), adapter.env_prefix):
            reads.append(Read(name, path, line, how, False))
    reads = [Read(r.name, r.path, r.line, r.how, r.name in names) for r in reads]
    return Registry(pristine.root, tuple(sorted(names)), tuple(sorted(reads, key=lambda r: (r.path, r.line, r.name))))


def _cache_key(tree: Tree, adapter: EngineAdapter) -> str:
    """The tree's digest and the registry code that read it: either changing makes a new entry."""
    code = Path(str(importlib.import_module(registered_names.__module__).__file__)).read_bytes()
    return hashlib.sha256(f"{tree.kind}:{tree.digest}:{adapter.name}:".encode() + code).hexdigest()


def pristine_registry(tree: Tree, adapter: EngineAdapter, cache: Cache) -> Registry:
    """The registry of a pristine tree, read once per release: trees in the cache never change,
    and the AST walk over ~2,000 modules is most of a flip's time."""
    entry = cache.root / "knobs" / f"{_cache_key(tree, adapter)}.json"
    try:
        raw = json.loads(entry.read_text(encoding="utf-8"))
        return Registry(tree.path, tuple(raw["names"]), tuple(Read(**r) for r in raw["bypass"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass  # absent or unreadable: read the tree
    found = registry(tree.path, adapter)
    write_atomic(entry, json.dumps({"names": list(found.names), "bypass": [asdict(r) for r in found.bypass]}))
    return found
