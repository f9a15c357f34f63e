"""A misbehaving index or pin: every fault ends in one true line, never a hang or a traceback.

The index is a real HTTP server on 127.0.0.1; its misbehaviour (trickling, cutting off, sending too
much, malformed JSON) is fault injection, since no public index fails on cue.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from forklift.config.schema import PathPin, PypiPin
from forklift.errors import ForkliftError
from forklift.source.materialize import materialize
from tests.cli import FORKLIFT, forklift
from tests.source.helpers import cache_entries, sdist_bytes


def pin_for(sha256: str) -> PypiPin:
    return PypiPin(source="pypi", package="pkg", version="1.0", sha256=sha256)


@pytest.fixture
def tight_deadline(monkeypatch):
    """Stalled below 1000 bytes/s over any second: the trickle (100 bytes/s) is far under it, loaded box or not."""
    monkeypatch.setenv("FORKLIFT_DOWNLOAD_MIN_RATE", "1000")
    monkeypatch.setenv("FORKLIFT_DOWNLOAD_WINDOW", "1")


def test_trickling_download_stops_as_stalled(index_server, cache, tmp_path, tight_deadline):
    sha = index_server.add("pkg", "pkg-1.0.tar.gz", sdist_bytes(), trickle=True)
    with pytest.raises(ForkliftError) as caught:
        materialize(pin_for(sha), tmp_path, cache, index_url=index_server.index)
    message = str(caught.value)
    assert (
        re.match(r"^stalled: \d+ bytes in \d+ s from ", message)
        and f" s from {index_server.url}/files/pkg-1.0.tar.gz" in message
    )
    assert cache_entries(cache) == {"trees": [], "tmp": [], "artifacts": []}


def test_trickling_index_page_stops_as_stalled(index_server, cache, tmp_path, tight_deadline):
    sha = index_server.add("pkg", "pkg-1.0.tar.gz", sdist_bytes())
    index_server.trickle_pages = True
    with pytest.raises(
        ForkliftError, match=rf"^stalled: \d+ bytes in \d+ s from {index_server.index}/pkg/ \(under 1000"
    ):
        materialize(pin_for(sha), tmp_path, cache, index_url=index_server.index)


def test_cut_connection_counts_the_bytes_that_arrived(index_server, cache, tmp_path):
    content = os.urandom(2 << 20)
    sha = index_server.add("pkg", "pkg-1.0.tar.gz", content, cut_after=524288)
    with pytest.raises(ForkliftError, match=r"cut off after 524288 bytes: "):
        materialize(pin_for(sha), tmp_path, cache, index_url=index_server.index)


def test_extra_trailing_bytes_are_not_called_truncated(index_server, cache, tmp_path):
    sha = index_server.add("pkg", "pkg-1.0.tar.gz", sdist_bytes(), extra=b"trailing garbage")
    with pytest.raises(ForkliftError) as caught:
        materialize(pin_for(sha), tmp_path, cache, index_url=index_server.index)
    message = str(caught.value)
    assert "truncated" not in message and "more bytes than the" in message and "expected; refused" in message
    assert cache_entries(cache)["artifacts"] == []


GOOD = {"filename": "pkg-1.0.tar.gz", "url": "../../files/pkg-1.0.tar.gz", "hashes": {"sha256": "0" * 64}}


@pytest.mark.parametrize(
    "page, field",
    [
        ([GOOD], "the page: input should be a valid dictionary"),
        ({"files": None}, "files: input should be a valid list"),
        ({"files": {"pkg-1.0.tar.gz": GOOD}}, "files: input should be a valid list"),
        ({"files": [{k: v for k, v in GOOD.items() if k != "url"}]}, "files.0.url: field required"),
        ({"files": [{**GOOD, "hashes": None}]}, "files.0.hashes: input should be a valid dictionary"),
        ({"files": [{**GOOD, "filename": 7}]}, "files.0.filename: input should be a valid string"),
    ],
)
def test_malformed_pep691_page_is_one_line_naming_the_field(index_server, cache, tmp_path, page, field):
    index_server.raw_pages["pkg"] = json.dumps(page).encode()
    with pytest.raises(ForkliftError) as caught:
        materialize(pin_for("0" * 64), tmp_path, cache, index_url=index_server.index)
    message = str(caught.value)
    assert message.startswith(f"the index {index_server.index}/pkg/ sent a malformed PEP 691 page: {field}")
    assert "\n" not in message


def test_page_that_is_not_json_is_one_line(index_server, cache, tmp_path):
    index_server.raw_pages["pkg"] = b"{not json"
    with pytest.raises(ForkliftError, match=r"did not answer with PEP 691 JSON \(Expecting"):
        materialize(pin_for("0" * 64), tmp_path, cache, index_url=index_server.index)


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_pinning_a_device_or_fifo_is_one_line_not_a_hang(tmp_path, cache, fifo, special):
    path = str(fifo) if special == "fifo" else special
    what = "a fifo" if special == "fifo" else "a character device"
    with pytest.raises(ForkliftError, match=rf"^{path}: is {what}, not a file or folder; only those can be pinned$"):
        materialize(PathPin(source="path", path=path, sha256="0" * 64), tmp_path, cache)
    # init reads the path to pin it: the same line, through the real command line (it would block forever before)
    done = forklift("init", "--path", path, "--dir", str(tmp_path / "dist"), cwd=tmp_path)
    assert (done.returncode, done.stderr.strip()) == (
        1,
        f"error: {path}: is {what}, not a file or folder; only those can be pinned",
    )


def test_ctrl_c_during_fetch_is_one_line_and_keeps_nothing_half_made(index_server, tmp_path):
    """SIGINT is sent once the server saw the download start (an event), while the file still trickles."""
    import signal
    import subprocess
    import time

    sha = index_server.add("pkg", "pkg-1.0.tar.gz", sdist_bytes(), trickle=True)
    (tmp_path / "forklift.toml").write_text(
        f'[upstream]\nsource = "pypi"\npackage = "pkg"\nversion = "1.0"\nsha256 = "{sha}"\n'
    )
    cache_root = tmp_path / "cache"
    env = {**os.environ, "FORKLIFT_CACHE": str(cache_root), "PIP_INDEX_URL": index_server.index}
    proc = subprocess.Popen([*FORKLIFT, "fetch"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300  # a ceiling; the event is the server seeing the file request
        while "/files/pkg-1.0.tar.gz" not in index_server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert err.strip().splitlines() == [
        (
            "interrupted: forklift fetch stopped by Ctrl-C; finished downloads and trees stay in the cache;"
            " the half-made one was discarded"
        )
    ]
    from forklift.source.cache import Cache

    assert cache_entries(Cache(cache_root)) == {"trees": [], "tmp": [], "artifacts": []}
