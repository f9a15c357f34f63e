"""The content-addressed cache of upstream artifacts, git mirrors and extracted trees.

Layout under the cache root (``FORKLIFT_CACHE``, else the platform's user cache folder)::

    artifacts/<sha256[:2]>/<sha256>   downloaded or copied files, stored only after their sha256 checked
    trees/<recipe>-<digest>/          pristine trees (treat read-only): archive-<sha256> (sdist or
                                      tarball, top folder stripped), wheel-<sha256>, git-<commit>,
                                      dir-<listing digest>
    trees/<recipe>-<digest>.done      completion marker, written last
    listings/<hash of a folder>.json  stat memo of a pinned folder (source.hashing): unchanged files are not re-read
    git/<sha256(url)[:24]>.git        bare mirrors of git remotes
    locks/                            filelock files: one writer per artifact, tree or mirror
    compiled/<sha256>                 markers of Python sources known to byte-compile (written by check)
    diffs.sqlite                      rendered file diffs for the overlay hash, each row with its own sha256
    checks/<key>.json                 whole-check results a check with unchanged inputs replays
                                      (series/resultcache.py)
    pip-index.json                    pip's configured index URL, with the stat of each file pip read
    tmp/                              work in progress; renamed into place only when complete

Nothing half-made is ever visible: files and trees are built under ``tmp/`` and renamed in,
and a tree counts as present only once its marker exists, so a crash mid-extract is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from forklift.errors import ForkliftError
from forklift.fsio import make_folder, write_atomic, writing
from forklift.source.hashing import directory_digest

if TYPE_CHECKING:
    from filelock import FileLock


@dataclass(frozen=True)
class Cache:
    root: Path
    verify: bool = False  # re-hash a cached tree against its recorded listing before trusting it

    def artifact_path(self, sha256: str) -> Path:
        return self.root / "artifacts" / sha256[:2] / sha256

    def tree_path(self, key: str) -> Path:
        return self.root / "trees" / key

    def mirror_path(self, url: str) -> Path:
        return self.root / "git" / f"{hashlib.sha256(url.encode()).hexdigest()[:24]}.git"

    def listing_memo(self, folder: Path) -> Path:
        """Where the stat memo of a pinned folder lives (source.hashing): keyed by the folder's real path."""
        return self.root / "listings" / f"{hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:24]}.json"

    def lock(self, name: str) -> FileLock:
        from filelock import FileLock  # imported here: a replayed check takes no lock, and filelock is slow to import

        folder = make_folder(self.root / "locks")
        return FileLock(str(folder / f"{name}.lock"))

    @contextmanager
    def scratch(self) -> Iterator[Path]:
        """A temporary folder on the cache's file system, so finished work can be renamed into place."""
        folder = make_folder(self.root / "tmp")
        self.sweep_scratch()
        name = secrets.token_hex(8)
        # The folder's lock is taken before the folder exists and held while it is in use; the OS drops
        # it when its process dies (even by SIGKILL), so an unheld lock beside a folder means abandoned.
        with self.lock(f"scratch-{name}"):
            path = folder / name
            path.mkdir()
            try:
                yield path
            finally:
                shutil.rmtree(path, ignore_errors=True)
        (self.root / "locks" / f"scratch-{name}.lock").unlink(missing_ok=True)

    def sweep_scratch(self) -> list[str]:
        """Remove the scratch folders whose process is gone (its lock is free); returns their names."""
        from filelock import Timeout

        folder = self.root / "tmp"
        removed = []
        for entry in folder.iterdir() if folder.is_dir() else ():
            lock = self.lock(f"scratch-{entry.name}")
            try:
                lock.acquire(timeout=0)
            except Timeout:  # in use
                continue
            try:
                shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
                removed.append(entry.name)
            finally:
                lock.release()
            Path(lock.lock_file).unlink(missing_ok=True)
        return removed

    def cached_tree(self, key: str) -> Path | None:
        """The finished tree for `key`, or None. Costs two stat calls (the warm hot path), plus a
        re-hash of the whole tree when `verify` is set; a tree that changed is removed and reported."""
        tree = self.tree_path(key)
        if not (_marker(tree).is_file() and tree.is_dir()):
            return None
        if self.verify and (problem := self.check_tree(key)) is not None:
            print(f"warning: cached tree {tree} {problem}; removed it, rebuilding", file=sys.stderr)
            self.remove_tree(key)
            return None
        return tree

    def built_ns(self, key: str) -> int | None:
        """When the tree for `key` was finished (its marker's mtime, ns), or None when it is not."""
        try:
            return _marker(self.tree_path(key)).stat().st_mtime_ns
        except OSError:
            return None

    def check_tree(self, key: str) -> str | None:
        """None when the tree still matches the listing digest recorded when it was built, else why not."""
        tree = self.tree_path(key)
        try:
            recorded = json.loads(_marker(tree).read_text()).get("listing")
        except (OSError, ValueError, AttributeError):
            recorded = None
        if not recorded:
            return "has no recorded listing (built by an older forklift)"
        try:
            found = directory_digest(tree)
        except ForkliftError as exc:
            return f"holds something that cannot be hashed ({exc})"
        return None if found == recorded else f"changed after extraction (listing {found}, recorded {recorded})"

    def remove_tree(self, key: str) -> None:
        tree = self.tree_path(key)
        with self.lock(key):
            _marker(tree).unlink(missing_ok=True)  # first: a half-removed tree is never taken as done
            shutil.rmtree(tree, ignore_errors=True)

    def verify_all(self) -> list[tuple[str, str | None]]:
        """(key, problem or None) for every finished tree; each changed one is removed."""
        results = []
        folder = self.root / "trees"
        for marker in sorted(folder.glob("*.done")) if folder.is_dir() else []:
            key = marker.name[: -len(".done")]
            problem = self.check_tree(key)
            if problem is not None:
                self.remove_tree(key)
            results.append((key, problem))
        return results

    def build_tree(self, key: str, build: Callable[[Path], None], listing: str | None = None) -> Path:
        """Return the tree for `key`, calling `build(dest)` to make it when absent.

        `build` must create `dest`; it runs under the key's lock, in a scratch folder, and its
        result is renamed into place before the marker is written. `listing` is the tree's listing
        digest when `build` itself checks the tree against it (a folder pin): not hashed again.
        """
        if tree := self.cached_tree(key):
            return tree
        with self.lock(key):
            if tree := self.cached_tree(key):  # another process built it while we waited
                return tree
            tree = self.tree_path(key)
            if tree.exists():  # left by a crash before the marker: never trust it
                shutil.rmtree(tree)
            make_folder(tree.parent)
            with writing(self.root), self.scratch() as scratch:  # a full or read-only cache: one line naming it
                build(scratch / "tree")
                os.rename(scratch / "tree", tree)
            # the listing digest lets `cache verify` and --verify-cache tell an edited tree from a pristine one
            write_atomic(_marker(tree), json.dumps({"key": key, "listing": listing or directory_digest(tree)}))
        return tree

    def ingest(self, sha256: str, chunks: Iterable[bytes], *, what: str, size: int | None = None) -> Path:
        """Store the bytes of `chunks` as artifact `sha256`, refusing them unless size and hash match.

        The bytes go to a temporary file first; a short read, a wrong hash or an exception from
        `chunks` (a connection cut) leaves nothing in the cache.
        """
        dest = self.artifact_path(sha256)
        with self.lock(f"artifact-{sha256}"):
            if dest.is_file():
                return dest
            make_folder(dest.parent)
            with writing(self.root), self.scratch() as scratch:
                tmp = scratch / "artifact"
                digest, count = hashlib.sha256(), 0
                with open(tmp, "wb") as out:
                    for chunk in chunks:
                        digest.update(chunk)
                        count += len(chunk)
                        if size is not None and count > size:  # stop at once: the rest may never end
                            raise ForkliftError(f"{what}: more bytes than the {size} expected; refused")
                        out.write(chunk)
                if size is not None and count < size:
                    raise ForkliftError(f"truncated download of {what}: got {count} of {size} bytes")
                if digest.hexdigest() != sha256:
                    raise ForkliftError(
                        f"sha256 mismatch for {what}: forklift.toml pins {sha256}, got {digest.hexdigest()}"
                    )
                os.rename(tmp, dest)
        return dest


def default_cache(verify: bool = False) -> Cache:
    """The user's cache: ``$FORKLIFT_CACHE`` when set, else platformdirs' user cache folder for forklift.

    With `verify` (`forklift check --verify-cache`), and always when the user asks for it in the
    environment (FORKLIFT_VERIFY_CACHE=1, or CI=true), every hit is re-hashed."""
    verify = verify or os.environ.get("FORKLIFT_VERIFY_CACHE", "") == "1" or os.environ.get("CI", "").lower() == "true"
    override = os.environ.get("FORKLIFT_CACHE")
    if override:
        return Cache(Path(override).expanduser(), verify)
    # local: platformdirs only when FORKLIFT_CACHE is unset
    from platformdirs import user_cache_dir

    return Cache(Path(user_cache_dir("forklift", appauthor=False)), verify)


def _marker(tree: Path) -> Path:
    return tree.with_name(tree.name + ".done")
