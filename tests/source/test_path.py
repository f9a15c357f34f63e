"""Local pins: a tarball by the sha256 of the file, a folder by the sha256 of its canonical listing."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from forklift.config.schema import PathPin
from forklift.errors import ForkliftError
from forklift.source.hashing import directory_digest, directory_listing
from forklift.source.materialize import materialize
from tests.source.helpers import sdist_bytes


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "src"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("A = 1\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "pkg" / "link.py").symlink_to("mod.py")
    (root / "empty").mkdir()
    (root / ".git").mkdir()
    (root / ".git" / "index").write_text("changes on every git status")
    return root


def test_listing_format(folder):
    assert directory_listing(folder) == (
        f"l {sha(b'mod.py')} pkg/link.py\n"
        f"f {sha(b'A = 1' + bytes([10]))} pkg/mod.py\n"
        f"x {sha(b'#!/bin/sh' + bytes([10]))} run.sh\n"
    )
    assert directory_digest(folder) == sha(directory_listing(folder).encode())


def test_digest_sees_content_mode_and_names_not_git_or_empty_folders(folder):
    before = directory_digest(folder)
    (folder / ".git" / "index").write_text("changed")
    (folder / "another-empty").mkdir()
    assert directory_digest(folder) == before
    (folder / "run.sh").chmod(0o644)
    assert directory_digest(folder) != before
    (folder / "run.sh").chmod(0o755)
    os.rename(folder / "pkg" / "mod.py", folder / "pkg" / "mod2.py")
    assert directory_digest(folder) != before


def test_folder_pin_is_copied_into_the_cache(folder, cache, tmp_path):
    digest = directory_digest(folder)
    tree = materialize(PathPin(source="path", path="src", sha256=digest), tmp_path, cache)
    assert (tree.kind, tree.digest, tree.path.name) == ("dir", digest, f"dir-{digest}")
    assert directory_digest(tree.path) == digest and not (tree.path / ".git").exists()
    (folder / "pkg" / "mod.py").write_text("A = 'edited'\n")
    expected = rf"^{folder}: sha256 mismatch: forklift.toml pins {digest}, found [0-9a-f]{{64}}$"
    with pytest.raises(ForkliftError, match=expected):
        materialize(PathPin(source="path", path="src", sha256=digest), tmp_path, cache)  # checked on every use


def test_a_first_use_copies_as_it_hashes_and_a_mismatch_leaves_no_tree(folder, cache, tmp_path):
    """The first use reads each file once, copying and hashing it; the copy keeps modes, links and folders."""
    old = time.time() - 3600  # not racily new: the stat memo may remember them
    for path in (folder / "pkg" / "mod.py", folder / "run.sh", folder / "pkg" / "link.py"):
        os.utime(path, (old, old), follow_symlinks=False)
    wrong = "e" * 64
    with pytest.raises(ForkliftError, match=rf"^{folder}: sha256 mismatch: forklift.toml pins {wrong}, found "):
        materialize(PathPin(source="path", path="src", sha256=wrong), tmp_path, cache)
    assert cache.cached_tree(f"dir-{wrong}") is None and not cache.tree_path(f"dir-{wrong}").exists()
    digest = directory_digest(folder)
    tree = materialize(PathPin(source="path", path="src", sha256=digest), tmp_path, cache).path
    assert directory_listing(tree) == directory_listing(folder)
    assert (tree / "empty").is_dir() and os.readlink(tree / "pkg" / "link.py") == "mod.py"
    assert (tree / "run.sh").stat().st_mode & 0o777 == 0o755
    assert (tree / "pkg" / "mod.py").stat().st_mtime_ns == (folder / "pkg" / "mod.py").stat().st_mtime_ns
    assert cache.listing_memo(folder).is_file()  # filled by the copy, for the next use's stat walk


def test_tarball_pin_and_hash_mismatch(tmp_path, cache):
    content = sdist_bytes()
    (tmp_path / "pkg-1.0.tar.gz").write_bytes(content)
    good = PathPin(source="path", path="pkg-1.0.tar.gz", sha256=sha(content))
    tree = materialize(good, tmp_path, cache)
    assert tree.kind == "tarball" and (tree.path / "pkg" / "__init__.py").is_file()
    wrong = "f" * 64
    message = rf"^{tmp_path}/pkg-1\.0\.tar\.gz: sha256 mismatch: forklift.toml pins {wrong}, found {sha(content)}$"
    with pytest.raises(ForkliftError, match=message):
        materialize(PathPin(source="path", path="pkg-1.0.tar.gz", sha256=wrong), tmp_path, cache)


def test_missing_local_path(tmp_path, cache):
    expected = r"gone\.tar\.gz: no such file or folder \(upstream\.path in forklift\.toml\)"
    with pytest.raises(ForkliftError, match=expected):
        materialize(PathPin(source="path", path="gone.tar.gz", sha256="0" * 64), tmp_path, cache)


def test_folder_with_escaping_symlink_is_refused(tmp_path, cache):
    root = tmp_path / "src"
    root.mkdir()
    (root / "a.py").write_text("")
    (root / "out").symlink_to("/etc")
    expected = r"^unsafe folder .*src: member 'out' is a symlink to the absolute path '/etc'"
    with pytest.raises(ForkliftError, match=expected):
        materialize(PathPin(source="path", path="src", sha256=directory_digest(root)), tmp_path, cache)
