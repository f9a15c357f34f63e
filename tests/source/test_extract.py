"""Safe extraction: every escaping member is refused with one line naming it, nothing lands in the cache."""

from __future__ import annotations

import hashlib
import io
import zipfile

import pytest

from forklift.config.schema import PathPin
from forklift.errors import ForkliftError
from forklift.source.extract import extract_archive
from forklift.source.materialize import materialize
from tests.source.helpers import cache_entries, make_tar, sdist_bytes


def pin_file(tmp_path, name: str, content: bytes) -> PathPin:
    path = tmp_path / name
    path.write_bytes(content)
    return PathPin(source="path", path=name, sha256=hashlib.sha256(content).hexdigest())


@pytest.mark.parametrize(
    "bad, why",
    [
        (("pkg-1.0/../evil.py", "file", "x"), r"member 'pkg-1\.0/\.\./evil\.py' climbs out with '\.\.'"),
        (("../evil.py", "file", "x"), r"member '\.\./evil\.py' climbs out"),
        (("/etc/evil", "file", "x"), r"member '/etc/evil' has an absolute path"),
        (("pkg-1.0/l", "symlink", "/etc/passwd"), r"member 'pkg-1\.0/l' is a symlink to the absolute path '/etc/"),
        (("pkg-1.0/sub/l", "symlink", "../../outside"), r"member 'pkg-1\.0/sub/l' is a symlink escaping the tree"),
        # the top folder is stripped, so a link to it from below points outside the tree
        (("pkg-1.0/l", "symlink", ".."), r"member 'pkg-1\.0/l' is a symlink escaping the tree"),
        (("pkg-1.0/h", "hardlink", "../etc/passwd"), r"member 'pkg-1\.0/h' climbs out"),
        (("pkg-1.0/dev", "chardev", ""), r"member 'pkg-1\.0/dev' is a device, fifo"),
        (("pkg-1.0/fifo", "fifo", ""), r"member 'pkg-1\.0/fifo' is a device, fifo"),
    ],
)
def test_unsafe_tarball_is_refused(tmp_path, cache, bad, why):
    pin = pin_file(tmp_path, "bad.tar.gz", make_tar([("pkg-1.0/a.py", "file", "x"), bad]))
    with pytest.raises(ForkliftError, match=rf"^unsafe archive bad\.tar\.gz: {why}") as caught:
        materialize(pin, tmp_path, cache)
    assert "\n" not in str(caught.value)
    assert cache_entries(cache)["trees"] == [] and cache_entries(cache)["tmp"] == []
    assert not (tmp_path.parent / "evil.py").exists() and not (tmp_path / "evil.py").exists()


def test_writing_through_an_inside_symlink_cannot_escape(tmp_path):
    """Each link alone stays inside, but writing through `a` (-> root) would put `l` one level up:
    no member is ever written through a symlink."""
    data = make_tar(
        [
            ("t/x/y/a", "symlink", "../.."),
            ("t/x/y/a/l", "symlink", "../q"),
        ]
    )
    archive = tmp_path / "a.tar"
    archive.write_bytes(data)
    with pytest.raises(ForkliftError, match=r"unsafe archive a\.tar: member 't/x/y/a/l' is written through 'x/y/a'"):
        extract_archive(archive, tmp_path / "out", strip_top=True)


def test_inside_links_are_kept(tmp_path, cache):
    pin = pin_file(tmp_path, "ok.tar.gz", sdist_bytes(extra=[("pkg-1.0/h.py", "hardlink", "pkg-1.0/pkg/__init__.py")]))
    tree = materialize(pin, tmp_path, cache)
    assert (tree.path / "pkg" / "link.py").read_text() == "VALUE = 1\n"
    assert (tree.path / "h.py").read_text() == "VALUE = 1\n"


def test_tarball_with_several_top_entries_is_not_stripped(tmp_path):
    archive = tmp_path / "flat.tar"
    archive.write_bytes(make_tar([("a/x.py", "file", "1"), ("b.py", "file", "2")], mode="w"))
    extract_archive(archive, tmp_path / "out", strip_top=True)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a", "b.py"]


@pytest.mark.parametrize(
    "name, attr, why",
    [
        ("../evil.py", 0, r"member '\.\./evil\.py' climbs out"),
        ("w/../../evil.py", 0, r"member 'w/\.\./\.\./evil\.py' climbs out"),
        ("/abs.py", 0, r"member '/abs\.py' has an absolute path"),
        ("w/link", 0o120777 << 16, r"member 'w/link' is not a file or folder"),
    ],
)
def test_unsafe_zip_is_refused(tmp_path, name, attr, why):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("w/ok.py", "x")
        info = zipfile.ZipInfo(name)
        info.external_attr = attr
        zf.writestr(info, "/etc/passwd")
    archive = tmp_path / "bad.whl"
    archive.write_bytes(out.getvalue())
    with pytest.raises(ForkliftError, match=rf"^unsafe archive bad\.whl: {why}"):
        extract_archive(archive, tmp_path / "out", strip_top=False)
    assert not (tmp_path / "evil.py").exists()


def test_not_an_archive(tmp_path):
    archive = tmp_path / "junk.tar.gz"
    archive.write_bytes(b"not a tarball at all")
    with pytest.raises(ForkliftError, match=r"^cannot read archive junk\.tar\.gz: not a tar archive"):
        extract_archive(archive, tmp_path / "out", strip_top=True)
