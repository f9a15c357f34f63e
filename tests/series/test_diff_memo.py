"""The overlay hash's diff memo in the cache (series/gate.py CachedDiffs): one SQLite file, written once per
check; a row that does not match its own sha256 or a file that is no database is never trusted."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from forklift.series.gate import CachedDiffs
from forklift.series.render import overlay_hash

CHANGED: dict[str, tuple[bytes | None, bytes | None]] = {
    "a.py": (b"x = 1\n", b"x = 2\n"),
    "b.py": (None, b"new\n"),
    "c.py": (b"gone\n", None),
}


def test_diffs_are_stored_once_and_read_back(tmp_path: Path) -> None:
    memo = CachedDiffs(tmp_path / "diffs.sqlite")
    expected = overlay_hash(CHANGED)
    assert overlay_hash(CHANGED, memo) == expected and len(memo.new) == 3
    memo.save()
    again = CachedDiffs(tmp_path / "diffs.sqlite")
    assert overlay_hash(CHANGED, again) == expected and again.new == {}  # every diff came from the file


def test_a_torn_row_is_rendered_again(tmp_path: Path) -> None:
    memo = CachedDiffs(tmp_path / "diffs.sqlite")
    expected = overlay_hash(CHANGED, memo)
    memo.save()
    with sqlite3.connect(tmp_path / "diffs.sqlite") as db:
        db.execute("UPDATE diffs SET body = substr(body, 1, 10)")
    again = CachedDiffs(tmp_path / "diffs.sqlite")
    assert overlay_hash(CHANGED, again) == expected and len(again.new) == 3


def test_a_file_that_is_no_database_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "diffs.sqlite").write_bytes(b"not a database at all, " * 100)
    memo = CachedDiffs(tmp_path / "diffs.sqlite")
    expected = overlay_hash(CHANGED, memo)
    memo.save()
    assert overlay_hash(CHANGED, CachedDiffs(tmp_path / "diffs.sqlite")) == expected


def test_a_memo_that_cannot_be_written_only_costs_its_use(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    memo = CachedDiffs(tmp_path / "file" / "diffs.sqlite")  # its folder is a file
    assert overlay_hash(CHANGED, memo) == overlay_hash(CHANGED)
    memo.save()
