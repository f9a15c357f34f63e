"""Property tests: any tar to forklift's tar reader, and any image layout to `verify --image`'s reader, gives a
result or a ForkliftError (one line), never another exception, and stays bounded in memory; the reader reads what
tarfile writes exactly as tarfile reads it back.

Bounded for CI (the "ci" profile: a few seconds); `scripts/fuzz` runs the "long" profile (conftest.py).
"""

from __future__ import annotations

import gzip
import io
import json
import resource
import tarfile
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from forklift.errors import ForkliftError
from forklift.ship.image import unpacked_engine
from forklift.source.limits import Limits
from forklift.source.tarstream import TarStream
from tests.ship.layouts import SITE, oci_layout

MAX_RSS_KIB = 512 << 10  # ru_maxrss is in KiB on Linux
NAMES = st.text(st.sampled_from("ab/é\n.-_ \x1b"), min_size=1, max_size=12)
LONG = st.builds(lambda n, k: "/".join([n] * k), st.sampled_from(["dir", "x" * 60, "ü" * 40]), st.integers(1, 6))
MEMBER = st.tuples(
    st.one_of(NAMES, LONG),
    st.sampled_from(["file", "folder", "symlink"]),
    st.binary(max_size=700),
    st.one_of(NAMES, LONG),
)


def tar_of(members, fmt: int) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=fmt) as tar:
        for name, kind, data, link in members:
            info = tarfile.TarInfo(name)
            if kind == "folder":
                info.type = tarfile.DIRTYPE
            elif kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, link
            else:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if kind == "file" else None)
    return out.getvalue()


def ours(data: bytes) -> list[tuple[str, str, str, bytes]]:
    stream = TarStream(io.BytesIO(data), "t", Limits(), len(data))
    found = []
    for member in stream:
        body = b""
        while chunk := stream.read(1 << 16):
            body += chunk
        found.append(
            (member.name.rstrip("/") if member.kind == "folder" else member.name, member.kind, member.linkname, body)
        )
    return found


@given(st.lists(MEMBER, max_size=8), st.sampled_from([tarfile.GNU_FORMAT, tarfile.PAX_FORMAT]), st.booleans())
def test_what_tarfile_writes_reads_back_the_same(members, fmt, compress):
    data = tar_of(members, fmt)
    kinds = {tarfile.REGTYPE: "file", tarfile.DIRTYPE: "folder", tarfile.SYMTYPE: "symlink"}
    theirs = []
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for info in tar:
            source = tar.extractfile(info) if info.isreg() else None
            theirs.append((info.name, kinds[info.type], info.linkname, source.read() if source else b""))
    assert ours(gzip.compress(data) if compress else data) == theirs


@given(st.lists(MEMBER, max_size=4), st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255)), max_size=6))
def test_any_damaged_tar_is_members_or_one_line(members, flips):
    data = bytearray(tar_of(members, tarfile.PAX_FORMAT))
    for offset, value in flips:
        if offset < len(data):
            data[offset] = value
    try:
        ours(bytes(data))
    except ForkliftError as exc:
        assert "\n" not in str(exc)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < MAX_RSS_KIB


PATHS = st.sampled_from(
    [
        SITE,
        f"{SITE}/vllm",
        f"{SITE}/vllm/__init__.py",
        f"{SITE}/vllm-1.dist-info/METADATA",
        f"{SITE}/.wh.vllm",
        f"{SITE}/.wh..wh..opq",
        ".wh..wh..opq",
        "usr/lib/python3",
        "usr/lib/.wh.python3",
        "opt/o/site-packages/vllm/__init__.py",
        "opt/o/site-packages",
        "usr/bin/python3",
        "usr/bin/python3.12",
        "opt/venv/pyvenv.cfg",
        "opt/venv/bin/python3",
        "opt/venv/lib/python3.12/site-packages/vllm/__init__.py",
        "etc/x",
    ]
)
TARGETS = st.sampled_from(
    ["/opt/o/site-packages", "../../opt/o", "python3.12", "/usr/bin/python3", "..", ".", "/", "loop", "etc/x"]
)
ENTRY = st.one_of(
    st.tuples(PATHS, st.just(b"x")),
    st.tuples(PATHS, st.none()),
    st.tuples(PATHS, TARGETS.map(lambda t: "->" + t)),
    st.tuples(PATHS, st.sampled_from(["=>etc/x", f"=>{SITE}/vllm/__init__.py"])),
)
SHAPES = st.sampled_from([None, "list", "no-digest", "ref-number"])


def broken(archive: Path, shape: str | None) -> None:
    index = json.loads((archive / "index.json").read_text())
    if shape == "list":
        index["manifests"] = {}
    elif shape == "no-digest":
        index["manifests"][0].pop("digest")
    elif shape == "ref-number":
        index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"] = 7
    (archive / "index.json").write_text(json.dumps(index))


@given(
    st.lists(st.lists(ENTRY, max_size=6), min_size=1, max_size=4),
    st.sampled_from([None, ["PATH=/opt/venv/bin:/usr/bin"], ["PATH=/usr/bin", "PYTHONPATH=/opt/o/site-packages"]]),
    SHAPES,
)
def test_any_image_layout_is_an_engine_or_one_line(layers, env, shape):
    with tempfile.TemporaryDirectory() as scratch:
        archive = oci_layout(Path(scratch) / "l", layers, env=env)
        broken(archive, shape)
        try:
            with unpacked_engine(archive, "vllm", "t") as unpacked:
                assert (unpacked.site / "vllm" / "__init__.py").is_file()
        except ForkliftError as exc:
            assert "\n" not in str(exc)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < MAX_RSS_KIB
