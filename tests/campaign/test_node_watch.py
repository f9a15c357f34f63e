"""What a Ray node sends the head from a cell's folders: whole files, each once per version, never a temp copy."""

import os

from forklift.campaign.node import _Watch
from forklift.fsio import write_atomic


def test_the_watch_sends_whole_files_once_and_never_a_temp_copy_in_flight(tmp_path):
    root = tmp_path / "receipts" / "r1-cell"
    write_atomic(root / "20261204T000000-boot-aa.json", b"{}")
    # what write_atomic leaves for an instant while it writes: the cell's thread renames it away at any moment
    in_flight = root / ".20261204T000001-bench-bb.json.x1y2.tmp"
    in_flight.write_bytes(b"{partial")
    watch = _Watch(root, "receipts")
    sent = [(m.path, m.data) for m in watch.new()]
    assert sent == [("20261204T000000-boot-aa.json", b"{}")]
    os.replace(in_flight, root / "20261204T000001-bench-bb.json")  # the rename lands: now it is sent, whole
    assert [m.path for m in watch.new()] == ["20261204T000001-bench-bb.json"]
    assert list(watch.new()) == []  # nothing new: nothing sent again
