"""A folder pin checked where it lies (source/inplace.py, materialize.pinned_reader): what it reads equals what
the copy in the cache reads, nothing is copied, and a file changed after the folder was hashed stops the read.

Real folders, real links, the real stat memo; the copy compared against is the one `forklift tree` still makes.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forklift.config.load import load_config
from forklift.config.schema import PathPin
from forklift.errors import ForkliftError
from forklift.fsio import tree_reader
from forklift.series.check import check_series
from forklift.series.gate import configured_series
from forklift.source.cache import Cache
from forklift.source.hashing import directory_digest
from forklift.source.materialize import materialize, pinned_reader
from tests.series.distro import MOD, distribution, edit

OLD = time.time() - 3600  # older than the memo's racy window, as a checkout at rest is


def make_folder(root: Path) -> Path:
    """Files, an executable, a file link, a folder link, an empty folder and a .git folder, all at rest."""
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text(MOD)
    (root / "pkg" / "sub" / "deep.py").write_text("D = 1\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "pkg" / "link.py").symlink_to("mod.py")
    (root / "alias").symlink_to("pkg")
    (root / "alias2").symlink_to("alias/sub")
    (root / "empty").mkdir()
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    for path in [*root.rglob("*")]:
        os.utime(path, (OLD, OLD), follow_symlinks=False)
    return root


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return make_folder(tmp_path / "src")


@pytest.fixture
def pin(folder: Path) -> PathPin:
    return PathPin(source="path", path="src", sha256=directory_digest(folder))


COMPONENTS = ["pkg", "mod.py", "sub", "deep.py", "run.sh", "link.py", "alias", "alias2", "empty", ".git", "config"]
PATHS = [
    "pkg/mod.py",
    "pkg/sub/deep.py",
    "run.sh",
    "pkg/link.py",
    "alias",
    "alias/mod.py",
    "alias/link.py",
    "alias2/deep.py",
    "alias/sub/deep.py",
    "pkg/nothing.py",
    "empty",
    "pkg",
    ".git/config",
    "pkg//mod.py",
    "./run.sh",
    "",
]


def read_both(pin: PathPin, root: Path, cache: Cache, paths: list[str]) -> list[tuple[object, object]]:
    """(type, bytes) of each path as read in place and as read from the tree copied into the cache."""
    copy = tree_reader(materialize(pin, root, cache).path)
    _, here = pinned_reader(pin, root, cache)
    return [((type(copy(p)), copy(p)), (type(here(p)), here(p))) for p in paths]


def test_reads_in_place_equal_reads_of_the_copy(folder: Path, pin: PathPin, tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    for copied, here in read_both(pin, tmp_path, cache, PATHS):
        assert here == copied
    tree, read = pinned_reader(pin, tmp_path, cache)
    assert (tree.path, tree.digest, tree.label, tree.in_place) == (folder, pin.sha256, "dir src", True)
    assert type(read("run.sh")).__name__ == "Executable" and type(read("alias/mod.py")).__name__ == "ThroughLink"
    assert read("pkg/../run.sh") is None and read("..") is None  # a patch never names `..` (series/diff.py)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([*COMPONENTS, ".", "", "nope"]), min_size=1, max_size=5))
def test_any_path_reads_as_from_the_copy(tmp_path_factory: pytest.TempPathFactory, parts: list[str]) -> None:
    root = tmp_path_factory.mktemp("any")
    folder = make_folder(root / "src")
    pin = PathPin(source="path", path="src", sha256=directory_digest(folder))
    [(copied, here)] = read_both(pin, root, Cache(root / "cache"), ["/".join(parts)])
    assert here == copied


def test_a_check_in_place_copies_nothing_and_reports_what_the_copy_did(tmp_path: Path) -> None:
    tree = {"pkg/mod.py": MOD, "pkg/gone.py": "G = 1\n", "tool.sh": "#!/bin/sh\n"}
    patches = {
        "0001-mod.patch": edit("pkg/mod.py", 10, "v10 = 100"),
        "0002-new.patch": "--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1 @@\n+K = 1\n",
        "0003-gone.patch": "--- a/pkg/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-G = 1\n",
        "0004-stale.patch": edit("pkg/mod.py", 20, "v20 = 200").replace(" v19", " v99"),
    }
    config = load_config(distribution(tmp_path, tree, patches) / "forklift.toml")
    cache = Cache(tmp_path / "cache")
    series = configured_series(config)
    pinned, read = pinned_reader(config.data.upstream, config.root, cache)
    here = check_series(series, read, [], tree=pinned.label, digest=pinned.digest)
    assert not (cache.root / "trees").exists()  # nothing copied
    copy = materialize(config.data.upstream, config.root, cache)
    copied = check_series(series, tree_reader(copy.path), [], tree=copy.label, digest=copy.digest)
    assert here.model_dump() == copied.model_dump()
    assert [r.status for r in here.pass1] == ["exact", "exact", "exact", "fails"] and here.overlay_hash


def test_a_file_changed_between_two_checks_is_caught(folder: Path, pin: PathPin, tmp_path: Path) -> None:
    """Same size, same inode, the mtime put back: only the ctime says it changed, and the memo keys on it."""
    cache = Cache(tmp_path / "cache")
    pinned_reader(pin, tmp_path, cache)
    before = os.stat(folder / "pkg" / "mod.py")
    (folder / "pkg" / "mod.py").write_text(MOD.replace("v10 = 10", "v10 = 99"))
    os.utime(folder / "pkg" / "mod.py", ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(folder / "pkg" / "mod.py")
    assert (after.st_size, after.st_ino, after.st_mtime_ns) == (before.st_size, before.st_ino, before.st_mtime_ns)
    with pytest.raises(ForkliftError, match=rf"^{folder}: sha256 mismatch: forklift.toml pins {pin.sha256}, found"):
        pinned_reader(pin, tmp_path, cache)


def _rewrite(path: Path) -> None:
    path.write_text("v1 = 'changed'\n")


def _remove(path: Path) -> None:
    path.unlink()


def _chmod(path: Path) -> None:
    path.chmod(0o755)


def _to_link(path: Path) -> None:
    path.unlink()
    path.symlink_to("sub/deep.py")


def _to_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize("change", [_rewrite, _remove, _chmod, _to_link, _to_fifo])
def test_a_file_changed_during_the_check_stops_the_read(folder: Path, pin: PathPin, tmp_path: Path, change) -> None:
    cache = Cache(tmp_path / "cache")
    _, read = pinned_reader(pin, tmp_path, cache)
    assert cache.listing_memo(folder).is_file()
    change(folder / "pkg" / "mod.py")
    with pytest.raises(ForkliftError, match=r"pkg/mod\.py: changed since the pinned folder was hashed \(listed as f "):
        read("pkg/mod.py")
    assert not cache.listing_memo(folder).exists()  # the next run hashes every file again
    assert read("run.sh") == b"#!/bin/sh\n"  # the others still read


def test_a_link_changed_during_the_check_stops_the_read(folder: Path, pin: PathPin, tmp_path: Path) -> None:
    _, read = pinned_reader(pin, tmp_path, Cache(tmp_path / "cache"))
    (folder / "alias").unlink()
    (folder / "alias").symlink_to("empty")
    with pytest.raises(ForkliftError, match=r"alias: changed since the pinned folder was hashed \(listed as l "):
        read("alias/mod.py")  # through the folder link
    with pytest.raises(ForkliftError, match=r"alias: changed since .* found a link to 'empty'"):
        read("alias")


def test_a_memo_that_lies_is_caught_by_the_read(folder: Path, pin: PathPin, tmp_path: Path) -> None:
    """A memo edited to give a changed file its old entry: the listing matches the pin, the read does not;
    --verify-cache's cache does not trust the memo at all."""
    cache = Cache(tmp_path / "cache")
    pinned_reader(pin, tmp_path, cache)
    memo = cache.listing_memo(folder)
    old = json.loads(memo.read_text())
    (folder / "pkg" / "mod.py").write_text("changed = 1\n")
    os.utime(folder / "pkg" / "mod.py", (OLD, OLD))
    info = os.stat(folder / "pkg" / "mod.py")
    entry = old["entries"]["pkg/mod.py"]
    old["entries"]["pkg/mod.py"] = [
        info.st_size,
        info.st_mtime_ns,
        info.st_ino,
        info.st_mode,
        info.st_ctime_ns,
        entry[5],
    ]
    memo.write_text(json.dumps(old))
    _, read = pinned_reader(pin, tmp_path, cache)
    with pytest.raises(ForkliftError, match=r"pkg/mod\.py: changed since the pinned folder was hashed"):
        read("pkg/mod.py")
    memo.write_text(json.dumps(old))
    with pytest.raises(ForkliftError, match="sha256 mismatch"):
        pinned_reader(pin, tmp_path, Cache(cache.root, verify=True))


def _size(path: Path) -> None:
    path.write_text(MOD + "v31 = 31\n")
    os.utime(path, (OLD, OLD))


def _mtime(path: Path) -> None:
    os.utime(path, (OLD - 60, OLD - 60))


def _inode(path: Path) -> None:
    info = os.stat(path)
    shutil.copy2(path, path.with_suffix(".new"))
    os.replace(path.with_suffix(".new"), path)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def _ctime(path: Path) -> None:
    info = os.stat(path)
    path.chmod(0o600)
    path.chmod(info.st_mode & 0o777)


@pytest.mark.parametrize("change", [_size, _mtime, _inode, _ctime])
def test_the_memo_is_invalidated_by_each_part_of_the_stat(
    folder: Path, pin: PathPin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change
) -> None:
    from forklift.source import hashing

    cache = Cache(tmp_path / "cache")
    pinned_reader(pin, tmp_path, cache)
    seen: list[str] = []
    real = hashing.file_sha256
    monkeypatch.setattr(hashing, "file_sha256", lambda path: seen.append(Path(path).name) or real(path))
    change(folder / "pkg" / "mod.py")
    try:
        pinned_reader(pin, tmp_path, cache)
    except ForkliftError:  # the size change is a new digest: read again, it is refused
        assert change is _size
    assert seen == ["mod.py"]  # only the changed file is hashed again


def test_an_escaping_link_is_refused_in_place(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    (root / "a.py").write_text("")
    (root / "out").symlink_to("/etc")
    pin = PathPin(source="path", path="src", sha256=directory_digest(root))
    with pytest.raises(ForkliftError, match=r"^unsafe folder .*src: member 'out' is a symlink to the absolute path"):
        pinned_reader(pin, tmp_path, Cache(tmp_path / "cache"))
