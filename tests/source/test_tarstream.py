"""forklift's tar reader: it reads what tarfile reads (the real vLLM sdist, and tarfile's three formats), and
refuses the headers tarfile would read whole (a 600 MiB pax or long-name header in a small gzip), chains of
them, too many members, paths too deep and endless padding, each before allocating, in one line.

The hostile tars are built here, block by block: no tool writes them (fault injection).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile

import pytest

from forklift.errors import ForkliftError
from forklift.source.cache import default_cache
from forklift.source.extract import extract_archive
from forklift.source.limits import MAX_HEADER_BYTES, Limits, UnsafeMember
from forklift.source.tarstream import BLOCK, TarStream
from tests.fixtures.pypi import VLLM_032, materialize_or_skip


def read_all(data: bytes, limits: Limits | None = None) -> list[tuple[str, str, int, str, bytes]]:
    stream = TarStream(io.BytesIO(data), "archive t.tar", limits or Limits(), len(data))
    found = []
    for member in stream:
        body = b""
        while chunk := stream.read(1 << 16):
            body += chunk
        found.append((member.name, member.kind, member.size, member.linkname, body))
    return found


def block(name: str, typeflag: bytes, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.type, info.size = typeflag, size
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def padded(data: bytes) -> bytes:
    return data + bytes(-len(data) % BLOCK)


@pytest.mark.network  # the sdist comes from the index on first use
def test_the_real_vllm_sdist_reads_as_tarfile_reads_it():
    materialize_or_skip(VLLM_032)
    artifact = default_cache().artifact_path(VLLM_032.sha256)
    ours = {}
    with open(artifact, "rb") as handle:
        stream = TarStream(handle, "sdist", Limits(), artifact.stat().st_size)
        for member in stream:
            digest = hashlib.sha256()
            while chunk := stream.read(1 << 20):
                digest.update(chunk)
            ours[member.name] = (member.kind, member.size, member.linkname, digest.hexdigest())
    theirs = {}
    kinds = {tarfile.REGTYPE: "file", tarfile.AREGTYPE: "file", tarfile.DIRTYPE: "folder", tarfile.SYMTYPE: "symlink"}
    with tarfile.open(artifact) as tar:
        for info in tar:
            source = tar.extractfile(info) if info.isreg() else None
            body = source.read() if source else b""
            kind = kinds[info.type]
            theirs[info.name + "/" * info.isdir()] = (
                kind,
                info.size if kind == "file" else 0,
                info.linkname,
                hashlib.sha256(body).hexdigest(),
            )
    assert len(ours) > 7000 and ours == theirs


def test_a_huge_pax_header_in_a_small_gzip_is_refused_before_it_is_read(tmp_path):
    """tarfile reads a pax header whole: 600 MiB of it took 1.2 GiB resident (docs/security.md)."""
    declared = 600 << 20
    archive = tmp_path / "pax.tar.gz"
    archive.write_bytes(gzip.compress(block("././@PaxHeader", b"x", declared) + bytes(4 << 20), compresslevel=1))
    said = rf"an extended header \(type 'x'\) of {declared} bytes \(at most {MAX_HEADER_BYTES}\)"
    with pytest.raises(UnsafeMember, match=said):
        extract_archive(archive, tmp_path / "out", strip_top=False)


def test_a_huge_gnu_long_name_is_refused_before_it_is_read():
    data = block("././@LongLink", b"L", 512 << 20) + bytes(BLOCK)
    with pytest.raises(UnsafeMember, match=r"an extended header \(type 'L'\) of 536870912 bytes"):
        read_all(data)


def test_a_chain_of_pax_headers_is_refused_without_recursion():
    record = b"10 path=a\n"
    one = block("pax", b"x", len(record)) + padded(record)
    data = one * 5000 + block("a", b"0", 0) + bytes(2 * BLOCK)
    with pytest.raises(UnsafeMember, match=r"over 16 extended headers before one member"):
        read_all(data)


def test_members_past_the_limit_are_refused_as_counted():
    data = b"".join(block(f"f{i}", b"0", 0) for i in range(101)) + bytes(2 * BLOCK)
    assert len(read_all(data, Limits(max_members=101))) == 101
    with pytest.raises(UnsafeMember, match=r"more than 100 members \(raise upstream.extract.max_members"):
        read_all(data, Limits(max_members=100))


def test_declared_sizes_past_the_limit_are_refused_before_the_data(tmp_path):
    data = block("big", b"0", 5 << 30) + bytes(BLOCK)  # declares 5 GiB, holds 512 bytes
    with pytest.raises(UnsafeMember, match=r"expands past 2.0 GiB at member 'big'"):
        read_all(data)


def test_endless_padding_after_the_end_is_refused():
    data = gzip.compress(block("a", b"0", 0) + bytes(8 << 20), compresslevel=1)
    with pytest.raises(UnsafeMember, match=r"over 1048576 bytes after the end of the archive"):
        read_all(data, Limits(max_ratio=1e9))


def test_a_path_too_deep_is_refused(tmp_path):
    deep = "/".join(["d"] * 300)
    archive = tmp_path / "deep.tar"
    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(tarfile.TarInfo(deep + "/f"), io.BytesIO())
    with pytest.raises(UnsafeMember, match=r"is 301 folders deep \(over 256\)"):
        extract_archive(archive, tmp_path / "out", strip_top=False)


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"", "not a tar archive (empty)"),
        (b"x" * 100, "not a tar archive"),
        (b"x" * BLOCK, "not a tar archive"),
        (block("a", b"0", 10)[:BLOCK] + b"short", "it ends inside member 'a' (truncated)"),
        (block("p", b"x", 8) + padded(b"9 path\n"), "a malformed pax record at byte 0 of its header"),
        (block("p", b"x", 11) + padded(b"11 size=zz\n") + block("a", b"0", 0), "a pax size 'zz' is not a number"),
    ],
)
def test_a_broken_tar_is_one_line(data, said):
    with pytest.raises(ForkliftError) as caught:
        read_all(data)
    assert str(caught.value) == f"cannot read archive t.tar: {said}"


def test_a_zips_member_count_is_read_from_its_end_record_before_zipfile_reads_it(tmp_path):
    import zipfile

    archive = tmp_path / "w.whl"
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(3):
            zf.writestr(f"m{i}", b"")
    with pytest.raises(UnsafeMember, match=r"more than 2 members"):
        extract_archive(archive, tmp_path / "out", strip_top=False, limits=Limits(max_members=2))
    archive.write_bytes(archive.read_bytes()[:-22])  # no end record
    with pytest.raises(ForkliftError, match=r"no zip end record"):
        extract_archive(archive, tmp_path / "out2", strip_top=False)


def test_an_image_layer_may_declare_more_than_an_archive():
    """A CUDA layer holds 5-10 GiB: read and skipped, never held, so only an archive's 2 GiB is refused."""
    data = block("libcuda.so", b"0", 3 << 30) + bytes(BLOCK)
    with pytest.raises(UnsafeMember, match=r"expands past 2.0 GiB"):
        read_all(data, Limits(max_ratio=1e12))
    with pytest.raises(ForkliftError, match=r"it ends inside member 'libcuda.so' \(truncated\)"):
        read_all(data, Limits(max_ratio=1e12).for_layers())
