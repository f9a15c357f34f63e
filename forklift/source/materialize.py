"""Turn a pin from forklift.toml into a pristine upstream tree in the cache.

A warm hit costs a couple of stat calls for PyPI pins (the tree is keyed by the pinned
sha256 and marked complete when built), an ``ls-remote`` for git pins (the tag is re-checked
every time: fail closed), and a hash of the local file or folder for path pins (a local pin
can change under us, so it is checked every time). A check reads a folder pin where it lies
(`pinned_reader`, source/inplace.py): only writing a tree out copies it into the cache.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from forklift.config import Config
from forklift.config.schema import GitPin, PathPin, PypiPin
from forklift.errors import ForkliftError
from forklift.fsio import Reader, tree_reader
from forklift.source.cache import Cache, default_cache
from forklift.source.extract import extract_archive, refuse_escaping_link, refuse_escaping_links
from forklift.source.hashing import directory_digest, directory_entries, file_sha256, listing_digest, pinnable_kind
from forklift.source.identity import prove_tree_identity, refuse_misnamed_file
from forklift.source.inplace import PinnedFolder
from forklift.source.limits import Limits

if TYPE_CHECKING:
    from rich.console import Console

TreeKind = Literal["sdist", "wheel", "git", "tarball", "dir"]


@dataclass(frozen=True)
class Tree:
    """A pristine upstream tree. `path` lives in the cache and is shared (or, `in_place`, is the user's pinned
    folder itself): treat it read-only."""

    path: Path
    digest: str  # the artifact's sha256, the commit for git, the listing digest for a folder
    label: str  # for people: "vllm 0.32.0 sdist"
    kind: TreeKind
    in_place: bool = False  # a folder pin read where it lies (pinned_reader), not a tree in the cache


def materialize(
    pin: PypiPin | GitPin | PathPin,
    root: Path,
    cache: Cache | None = None,
    progress: Console | None = None,
    *,
    index_url: str | None = None,
) -> Tree:
    """The pinned tree, fetched, verified and extracted on first use, from the cache afterwards.

    `root` is the folder of forklift.toml (relative local paths resolve there); `progress` is a
    rich Console for a download bar and spinners (terminals only); `index_url` overrides PIP_INDEX_URL / PyPI.
    """
    cache = cache or default_cache()
    if progress is not None and not progress.is_terminal:
        progress = None  # live bars in a CI log are only noise (and stray blank lines)
    if isinstance(pin, PypiPin):
        return _pypi(pin, cache, progress, index_url)
    if isinstance(pin, GitPin):
        return _git(pin, Path(root), cache, progress)
    if isinstance(pin, PathPin):
        return _path(pin, Path(root), cache, progress)
    raise TypeError(f"not a pin: {pin!r}")


def _pypi(pin: PypiPin, cache: Cache, progress: Console | None, index_url: str | None) -> Tree:
    kind: TreeKind = "wheel" if (pin.filename or "").endswith(".whl") else "sdist"

    def build(dest: Path) -> None:
        artifact = pypi_artifact(pin, cache, progress, index_url)
        name = pin.filename or f"{pin.package} {pin.version} sdist"
        with _status(progress, f"extracting {name}"):
            _extract_verified(artifact, pin, dest, strip_top=kind == "sdist", name=name)

    refuse_misnamed_file(pin)
    path = cache.build_tree(f"{'wheel' if kind == 'wheel' else 'archive'}-{pin.sha256}", build)
    label = f"{pin.package} {pin.version} {kind}"
    # the tree is the sha256's, whichever pin fetched it: its own metadata proves it is this pin's release
    prove_tree_identity(path, pin, kind == "wheel", label)
    return Tree(path, pin.sha256, label, kind)


def pypi_artifact(pin: PypiPin, cache: Cache, progress: Console | None = None, index_url: str | None = None) -> Path:
    """The pinned file itself in the cache, downloaded (and its sha256 checked) when absent."""
    artifact = cache.artifact_path(pin.sha256)
    if artifact.is_file():
        return artifact
    from forklift.source.download import download  # here: a folder pin's check pays no index imports
    from forklift.source.index import resolve_pypi_file

    file = resolve_pypi_file(pin.package, pin.version, pin.filename, index_url)
    return download(file, pin.sha256, cache, progress)


def _git(pin: GitPin, root: Path, cache: Cache, progress: Console | None) -> Tree:
    from forklift.source import gitpin
    from forklift.source.index import redact

    url = gitpin.resolve_url(pin.url, root)
    label = f"{redact(pin.url)} {pin.tag} @ {pin.commit[:12]}"
    if gitpin.remote_tag_commit(url, pin.tag) != pin.commit or cache.cached_tree(f"git-{pin.commit}") is None:
        mirror = _mirror(url, cache, progress)
        gitpin.verify_pin(mirror, url, pin.tag, pin.commit)
        _checkout(mirror, pin.commit, label, cache, progress)
    return Tree(cache.tree_path(f"git-{pin.commit}"), pin.commit, label, "git")


def pinned_tree(config: Config, progress: Console | None = None) -> Tree:
    """The distribution's pinned upstream tree (materialize() with its pin and folder)."""
    return materialize(config.data.upstream, config.root, progress=progress)


def materialize_ref(
    pin: GitPin, ref: str, root: Path, cache: Cache | None = None, progress: Console | None = None
) -> tuple[Tree, str]:
    """The tree a branch or tag `ref` of the pin's repository names now (upstream main, say), and its commit:
    an early look at the next release, never a pin (a branch head moves)."""
    from forklift.source import gitpin
    from forklift.source.index import redact

    cache = cache or default_cache()
    url = gitpin.resolve_url(pin.url, root)
    commit = gitpin.remote_ref_commit(url, ref)
    label = f"{redact(pin.url)} {ref} @ {commit[:12]}"
    if cache.cached_tree(f"git-{commit}") is None:
        mirror = _mirror(url, cache, progress)
        if not gitpin.has_commit(mirror, commit):
            raise ForkliftError(f"{ref!r} moved while fetching {redact(url)}: {commit[:12]} is not in the fetch")
        _checkout(mirror, commit, label, cache, progress)
    return Tree(cache.tree_path(f"git-{commit}"), commit, label, "git"), commit


def _mirror(url: str, cache: Cache, progress: Console | None) -> Path:
    from forklift.source import gitpin
    from forklift.source.index import redact

    with _status(progress, f"fetching {redact(url)}"):
        return gitpin.update_mirror(url, cache)


def _checkout(mirror: Path, commit: str, label: str, cache: Cache, progress: Console | None) -> None:
    from forklift.source import gitpin

    def build(dest: Path) -> None:
        with _status(progress, f"checking out {commit[:12]}"):
            gitpin.checkout_commit(mirror, commit, dest, label)
        refuse_escaping_links(dest, f"git tree {label}")

    cache.build_tree(f"git-{commit}", build)


def pinned_path(pin: PathPin, root: Path) -> Path:
    """The folder or tarball a path pin names (relative paths resolve beside forklift.toml)."""
    source = Path(pin.path).expanduser()
    return source if source.is_absolute() else root / source


def pinned_reader(
    pin: PypiPin | GitPin | PathPin, root: Path, cache: Cache | None = None, progress: Console | None = None
) -> tuple[Tree, Reader]:
    """The pinned tree and a reader of its files, for a check. A folder pin is read where it lies: its
    listing (through the stat memo) is proven against the pin and each file read is held to it
    (source/inplace.py), with no copy into the cache; any other pin is read from its tree in the cache."""
    cache = cache or default_cache()
    if isinstance(pin, PathPin):
        source = pinned_path(pin, Path(root))
        if source.exists() and pinnable_kind(source) == "dir":
            with _nesting(source):
                return _in_place(pin, source, cache)
    tree = materialize(pin, root, cache, progress)
    return tree, tree_reader(tree.path)


def _in_place(pin: PathPin, source: Path, cache: Cache) -> tuple[Tree, Reader]:
    memo = None if cache.verify else cache.listing_memo(source)  # --verify-cache: every file hashed again
    entries = directory_entries(source, memo)
    if (found := listing_digest(entries)) != pin.sha256:
        raise ForkliftError(f"{source}: sha256 mismatch: forklift.toml pins {pin.sha256}, found {found}")
    for rel, entry in entries.items():
        if entry.startswith("l "):
            refuse_escaping_link(source, rel, f"folder {source}")
    tree = Tree(source, pin.sha256, f"dir {pin.path}", "dir", in_place=True)
    return tree, PinnedFolder(source, entries, memo).read


def _path(pin: PathPin, root: Path, cache: Cache, progress: Console | None) -> Tree:
    source = pinned_path(pin, root)
    with _nesting(source):
        return _path_tree(pin, source, cache, progress)


@contextmanager
def _nesting(source: Path) -> Iterator[None]:
    """A walk that recurses once per folder level (os.walk in the link check) too deep is one line."""
    try:
        yield
    except RecursionError:
        raise ForkliftError(
            f"{source}: folders nested deeper than {sys.getrecursionlimit()} levels; such a tree cannot be pinned"
        ) from None


def _path_tree(pin: PathPin, source: Path, cache: Cache, progress: Console | None) -> Tree:
    if not source.exists():
        raise ForkliftError(f"{source}: no such file or folder (upstream.path in forklift.toml)")
    kind: TreeKind = "dir" if pinnable_kind(source) == "dir" else "tarball"
    key = f"{'dir' if kind == 'dir' else 'archive'}-{pin.sha256}"
    memo = cache.listing_memo(source)
    checked: list[str] = []  # the source's digest, once known

    def check(found: str) -> None:
        if found != pin.sha256:
            raise ForkliftError(f"{source}: sha256 mismatch: forklift.toml pins {pin.sha256}, found {found}")
        checked.append(found)

    if kind == "tarball" or cache.cached_tree(key) is not None:
        check(directory_digest(source, memo=memo) if kind == "dir" else file_sha256(source))

    def build(dest: Path) -> None:
        with _status(progress, f"copying {source} into the cache"):
            if kind == "dir":  # one pass: the digest is of the bytes as copied
                check(directory_digest(source, memo=memo, copy_to=dest))
                refuse_escaping_links(dest, f"folder {source}")
                return
            with open(source, "rb") as handle:
                artifact = cache.ingest(pin.sha256, iter(lambda: handle.read(1 << 20), b""), what=str(source))
            _extract_verified(artifact, pin, dest, strip_top=True, name=source.name)

    listing = pin.sha256 if kind == "dir" else None  # build checked the copy against it
    path = cache.build_tree(key, build, listing)
    if not checked:  # another process built the tree meanwhile: the source is still to be checked
        check(directory_digest(source, memo=memo))
    return Tree(path, pin.sha256, f"{kind} {pin.path}", kind)


def _status(console: Console | None, text: str) -> AbstractContextManager[object]:
    """A spinner on `console` for a slow step, or nothing."""
    return console.status(text) if console is not None else nullcontext()


def _extract_verified(artifact: Path, pin: PypiPin | PathPin, dest: Path, *, strip_top: bool, name: str) -> None:
    """Extract a cached artifact after re-checking its hash (cheap next to extraction; catches a tampered cache)."""
    if (found := file_sha256(artifact)) != pin.sha256:
        artifact.unlink()
        raise ForkliftError(f"cached artifact {artifact} was corrupted (sha256 {found}); removed it, run again")
    extract_archive(artifact, dest, strip_top=strip_top, name=name, limits=Limits.from_env(configured=pin.extract))
