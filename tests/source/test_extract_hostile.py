"""Hostile archives: each known escape technique is refused, nothing is written outside, no tree is marked done.

The archives are built here with tarfile/zipfile: that is fault injection (no real index serves them
on cue). The outside victim sits beside the cache, where every technique aims.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
import zipfile

import pytest

from forklift.config.schema import PathPin
from forklift.errors import ForkliftError
from forklift.source.extract import extract_archive
from forklift.source.limits import Limits
from forklift.source.materialize import materialize
from tests.source.helpers import cache_entries, make_tar

# From the tree being built (cache/tmp/<scratch>/tree) up to tmp_path, where `outside/` lives.
UP_TO_TMP = "../../../../"


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "victim").write_text("original\n")
    return folder


def fetch_refused(tmp_path, cache, outside, data: bytes, name: str = "hostile.tar", match: str = "") -> str:
    """Pin `data` as a local tarball, fetch it, and check the refusal left no trace anywhere."""
    (tmp_path / name).write_bytes(data)
    pin = PathPin(source="path", path=name, sha256=hashlib.sha256(data).hexdigest())
    with pytest.raises(ForkliftError, match=match) as caught:
        materialize(pin, tmp_path, cache)
    message = str(caught.value)
    assert "\n" not in message
    assert sorted(p.name for p in outside.iterdir()) == ["victim"], "a file was written outside the cache"
    assert (outside / "victim").read_text() == "original\n", "the victim outside the cache was overwritten"
    assert cache_entries(cache)["trees"] == [] and cache_entries(cache)["tmp"] == [], "a tree was kept"
    return message


def tar_of(members: list[tarfile.TarInfo | tuple[tarfile.TarInfo, bytes]], mode: str = "w") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode, format=tarfile.PAX_FORMAT) as tar:
        for item in members:
            info, data = item if isinstance(item, tuple) else (item, None)
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, 0o755 if kind == tarfile.DIRTYPE else 0o644
    return info


def test_cve_2025_4517_path_max_symlink_then_hardlink_is_refused(tmp_path, cache, outside):
    """The published technique: nested links whose resolved path passes PATH_MAX, so realpath stops and
    tarfile's data filter (3.11.7) takes `escape` for an inside link; then a file and a hardlink through it."""
    comp, steps, members, path = "d" * 247, "abcdefghijklmnop", [], ""
    for step in steps:
        members.append(entry(f"{path}{comp}", tarfile.DIRTYPE))
        members.append(entry(f"{path}{step}", tarfile.SYMTYPE, comp))
        path += comp + "/"
    linkpath = "/".join(steps) + "/" + "l" * 254
    members.append(entry(linkpath, tarfile.SYMTYPE, "../" * len(steps)))
    members.append(entry("escape", tarfile.SYMTYPE, f"{linkpath}/{UP_TO_TMP}outside"))
    members.append((entry("escape/created"), b"written outside\n"))
    members.append(entry("victimlink", tarfile.LNKTYPE, "escape/victim"))
    members.append((entry("victimlink"), b"overwritten\n"))
    fetch_refused(tmp_path, cache, outside, tar_of(members), match=r"^unsafe archive hostile\.tar: member ")


def test_cve_2007_4559_dotdot_member_is_refused(tmp_path, cache, outside):
    data = tar_of([(entry(f"{UP_TO_TMP}outside/created"), b"x")])
    fetch_refused(tmp_path, cache, outside, data, match=r"climbs out with '\.\.'")


# `x/up` names the root; `x/out` reads lexically as `outside/` inside the tree (`up/..` cancels),
# but followed on disk it is the root's parent's parents: tmp_path/outside.
DEEP = "t/x1/x2/x3/x4"
CHAIN = [
    entry(DEEP, tarfile.DIRTYPE),
    entry(f"{DEEP}/up", tarfile.SYMTYPE, "../../../.."),
    entry(f"{DEEP}/out", tarfile.SYMTYPE, f"up/{UP_TO_TMP}outside"),
]


def test_cve_2025_4330_4138_link_chain_resolving_outside_is_refused(tmp_path, cache, outside):
    """Each link looks inside on its own, but followed on disk `out` leaves the tree."""
    data = tar_of(
        [
            *CHAIN,
        ]
    )
    message = fetch_refused(
        tmp_path, cache, outside, data, match=r"^unsafe archive hostile\.tar: member 't/x1/x2/x3/x4/out'"
    )
    assert "symlink escaping the tree through other links" in message


def test_writing_through_a_link_chain_is_refused(tmp_path, cache, outside):
    data = tar_of(
        [
            *CHAIN,
            (entry(f"{DEEP}/out/created"), b"x"),
        ]
    )
    fetch_refused(
        tmp_path, cache, outside, data, match=r"member 't/x1/x2/x3/x4/out/created' is written through 'x1/x2/x3/x4/out'"
    )


def test_hardlink_through_a_symlink_chain_is_refused(tmp_path, cache, outside):
    data = tar_of(
        [
            *CHAIN,
            entry("t/grab", tarfile.LNKTYPE, f"{DEEP}/out/victim"),
            (entry("t/grab"), b"overwritten\n"),
        ]
    )
    fetch_refused(tmp_path, cache, outside, data, match=r"member 't/grab' is a hardlink to 'x1/x2/x3/x4/out/victim'")


def test_hardlink_to_a_symlink_is_refused(tmp_path, cache, outside):
    data = tar_of([entry("t/l", tarfile.SYMTYPE, "a"), (entry("t/a"), b"x"), entry("t/h", tarfile.LNKTYPE, "t/l")])
    fetch_refused(tmp_path, cache, outside, data, match=r"member 't/h' is a hardlink to 'l', which is not a regular")


def test_over_long_names_are_refused(tmp_path, cache, outside):
    data = tar_of([(entry("t/" + "n" * 300), b"x")])
    fetch_refused(tmp_path, cache, outside, data, match=r"has an over-long name")


def test_zip_slip_is_refused(tmp_path, cache, outside):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("w/ok.py", "x")
        zf.writestr(f"w/{UP_TO_TMP}../outside/created", "x")
    fetch_refused(tmp_path, cache, outside, out.getvalue(), name="slip.whl", match=r"climbs out with '\.\.'")


def test_tar_bomb_is_refused_by_its_ratio(tmp_path, cache, outside):
    zeros = b"\0" * (64 << 20)
    data = tar_of([(entry("t/zeros"), zeros)], mode="w:gz")
    assert len(data) < 1 << 20  # 64 MiB in well under 1 MiB: far past any source tarball's ratio
    fetch_refused(tmp_path, cache, outside, data, name="bomb.tar.gz", match=r"expands more than 200 times")


def test_zip_bomb_is_refused_by_its_ratio(tmp_path, cache, outside):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("w/zeros", b"\0" * (32 << 20))
    fetch_refused(tmp_path, cache, outside, out.getvalue(), name="bomb.whl", match=r"a decompression bomb\?")


def test_size_and_member_limits_come_from_the_environment(tmp_path, cache, outside, monkeypatch):
    data = make_tar([("t/a", "file", "x" * 5000), ("t/b", "file", "y"), ("t/c", "file", "z")], mode="w")
    monkeypatch.setenv("FORKLIFT_EXTRACT_MAX_BYTES", "4096")
    fetch_refused(
        tmp_path,
        cache,
        outside,
        data,
        match=r"expands past 4096 bytes at member 't/a' \(raise upstream\.extract\.max_bytes in forklift\.toml or FORKLIFT_EX",
    )
    monkeypatch.setenv("FORKLIFT_EXTRACT_MAX_BYTES", "1000000")
    monkeypatch.setenv("FORKLIFT_EXTRACT_MAX_MEMBERS", "2")
    fetch_refused(
        tmp_path,
        cache,
        outside,
        data,
        match=r"more than 2 members \(raise upstream\.extract\.max_members in forklift\.toml or FORKLIFT_EXTRACT_MAX_MEMBERS\)",
    )


def test_a_lying_size_header_is_caught_while_writing(tmp_path):
    """The bytes written are counted, not only the sizes the headers declare (a gzip member can lie)."""
    archive = tmp_path / "big.tar"
    archive.write_bytes(make_tar([("t/a", "file", "x" * 3000), ("t/b", "file", "y" * 3000)], mode="w"))
    with pytest.raises(ForkliftError, match=r"expands past 4000 bytes"):
        extract_archive(archive, tmp_path / "out", strip_top=True, limits=Limits(max_bytes=4000))


@pytest.mark.parametrize("value", ["0", "-5", "lots", "inf", "nan"])
def test_bad_limit_values_are_one_line(value):
    with pytest.raises(ForkliftError, match=rf"^FORKLIFT_EXTRACT_MAX_RATIO='{value}': expected a positive number$"):
        Limits.from_env({"FORKLIFT_EXTRACT_MAX_RATIO": value})


def test_a_normal_gzip_sdist_still_extracts(tmp_path):
    payload = "".join(f"line {i}\n" for i in range(20000)).encode()
    archive = tmp_path / "ok.tar.gz"
    archive.write_bytes(gzip.compress(tar_of([entry("p-1", tarfile.DIRTYPE), (entry("p-1/m.py"), payload)])))
    extract_archive(archive, tmp_path / "out", strip_top=True)
    assert (tmp_path / "out" / "m.py").read_bytes() == payload


def test_limits_come_from_forklift_toml_and_the_environment_wins(tmp_path, cache, outside, monkeypatch):
    data = make_tar([("t/a", "file", "x" * 5000)], mode="w")
    (tmp_path / "big.tar").write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    (tmp_path / "forklift.toml").write_text(
        f'[upstream]\nsource = "path"\npath = "big.tar"\nsha256 = "{sha}"\n[upstream.extract]\nmax_bytes = 4096\n'
    )
    from forklift.config import load_config

    pin = load_config(tmp_path).data.upstream
    with pytest.raises(ForkliftError, match=r"expands past 4096 bytes"):
        materialize(pin, tmp_path, cache)
    monkeypatch.setenv("FORKLIFT_EXTRACT_MAX_BYTES", "10000")
    assert (materialize(pin, tmp_path, cache).path / "a").stat().st_size == 5000
