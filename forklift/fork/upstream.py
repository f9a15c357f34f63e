"""Which paths belong to upstream's tree, the set export, replay and flip compare over.

A fork repository holds more than upstream ships (CI files, fork notes, a PyPI
sdist lacks the repository's .github/); only paths inside upstream's tree can
be part of a patch series that applies to the pristine release.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class UpstreamPaths:
    files: frozenset[str]
    top_dirs: frozenset[str]

    @classmethod
    def from_files(cls, files: set[str] | frozenset[str]) -> UpstreamPaths:
        return cls(files=frozenset(files), top_dirs=frozenset(f.split("/", 1)[0] for f in files if "/" in f))

    @classmethod
    def from_tree(cls, root: Path) -> UpstreamPaths:
        return cls.from_files(set(tree_files(root)))

    def contains(self, path: str) -> bool:
        """An upstream file, or a new file under one of upstream's top-level folders (vllm/new.py)."""
        return path in self.files or ("/" in path and path.split("/", 1)[0] in self.top_dirs)


def tree_files(root: Path) -> list[str]:
    """Every file (and symlink) under root as a /-separated relative path, sorted."""
    out: list[str] = []
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        if not prefix:
            dirs[:] = [d for d in dirs if d != ".git"]
        out.extend(prefix + name for name in files)
        out.extend(prefix + d for d in dirs if os.path.islink(os.path.join(folder, d)))
    return sorted(out)
