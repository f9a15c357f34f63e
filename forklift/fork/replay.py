"""Replay identity: the series applied to the pristine tree must equal the fork tip's tree.

The comparison covers the paths upstream ships (plus any new file the fork or
the series adds under upstream's folders); fork-only files such as CI config
are outside it. Contents are compared as git blob ids, so the fork's tree is
read from git's object store without checking anything out.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from forklift.config.schema import Applier
from forklift.errors import ForkliftError
from forklift.fork.repo import Git
from forklift.fork.upstream import UpstreamPaths
from forklift.series.apply import APPLIED, Reader, apply_series
from forklift.series.model import Patch


@dataclass(frozen=True)
class Difference:
    path: str
    reason: str  # "content differs", "only in the fork", "missing from the fork"

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass(frozen=True)
class Replay:
    tip: str
    compared: int
    differences: tuple[Difference, ...]
    not_in_base: tuple[str, ...] = ()  # upstream files the fork's base commit never had (sdist-generated)

    @property
    def identical(self) -> bool:
        return not self.differences


def blob_id(content: bytes) -> str:
    """git's object id of a blob with this content (what `git hash-object` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def pristine_reader(root: Path, upstream: UpstreamPaths) -> Reader:
    """Read a pristine file (a symlink reads as its target, as git stores it); absent paths read None."""

    def read(path: str) -> bytes | None:
        if path not in upstream.files:
            return None
        full = root / path
        return os.readlink(full).encode() if full.is_symlink() else full.read_bytes()

    return read


def replay_series(
    git: Git,
    ref: str,
    pristine_root: Path,
    patches: list[Patch] | tuple[Patch, ...],
    applier: Applier,
    base: str | None = None,
) -> Replay:
    """Apply the series to the pristine tree (by `applier`'s rules) and compare with `ref`'s tree over upstream's paths.

    With the fork's `base` commit, upstream files that the base never had and nothing touched
    (an sdist ships generated files such as vllm/_version.py that a git fork does not track) are
    listed apart instead of as differences: the fork did not lose them, it never had them.
    """
    git.ensure_repo()
    tip = git.commit_of(ref, "fork ref")
    upstream = UpstreamPaths.from_tree(pristine_root)
    read = pristine_reader(pristine_root, upstream)
    results, overlay = apply_series(read, patches, applier)
    for result in results:
        if result.status not in APPLIED:
            raise ForkliftError(
                f"{result.name}: {result.status} on the pristine tree, so the series cannot be "
                "replayed (run `forklift check`)"
            )
    fork = {path: blob for path, blob in git.tree_blobs(tip).items() if upstream.contains(path)}
    paths = sorted(upstream.files | set(overlay.files) | set(fork))
    untracked: set[str] = set()
    if base is not None:
        base_paths = set(git.tree_blobs(git.commit_of(base, "base")))
        untracked = {p for p in upstream.files - base_paths - set(fork) if p not in overlay.files}
    differences = []
    for path in paths:
        if path in untracked:
            continue
        expected = overlay.read(path)
        actual = fork.get(path)
        if expected is None and actual is None:
            continue
        if expected is None:
            differences.append(Difference(path, "only in the fork"))
        elif actual is None:
            differences.append(Difference(path, "missing from the fork"))
        elif blob_id(expected) != actual:
            differences.append(Difference(path, "content differs"))
    return Replay(
        tip=tip,
        compared=len(paths) - len(untracked),
        differences=tuple(differences),
        not_in_base=tuple(sorted(untracked)),
    )
