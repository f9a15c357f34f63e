"""A folder pin's stat memo (source.hashing): the digest is the same with and without it, an unchanged file
is not read again, and a changed, added, removed or racily fresh file always is."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from forklift.source import hashing
from forklift.source.hashing import RACY_NS, directory_digest


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    for i in range(20):
        (root / "pkg" / f"m{i}.py").write_text(f"x = {i}\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "link").symlink_to("pkg/m1.py")
    old = time.time() - 3600  # older than the racy window, as a checkout at rest is
    for path in [*root.rglob("*")]:
        os.utime(path, (old, old), follow_symlinks=False)
    return root


@pytest.fixture
def reads(monkeypatch):
    """Which files the digest reads (a spy on the one file hasher; the hashing itself is real)."""
    seen: list[str] = []
    real = hashing.file_sha256
    monkeypatch.setattr(hashing, "file_sha256", lambda path: seen.append(Path(path).name) or real(path))
    return seen


def test_memo_gives_the_same_digest_and_skips_unchanged_files(folder, tmp_path, reads):
    memo = tmp_path / "memo.json"
    plain = directory_digest(folder)
    assert len(reads) == 21
    reads.clear()
    assert directory_digest(folder, memo) == plain and len(reads) == 21  # first run: everything read
    reads.clear()
    assert directory_digest(folder, memo) == plain and reads == []  # nothing changed: nothing read


def test_a_changed_file_is_read_and_changes_the_digest(folder, tmp_path, reads):
    memo = tmp_path / "memo.json"
    before = directory_digest(folder, memo)
    (folder / "pkg" / "m3.py").write_text("x = 33\n")  # same size, new bytes, new mtime
    reads.clear()
    after = directory_digest(folder, memo)
    assert reads == ["m3.py"] and after != before and after == directory_digest(folder)


def test_added_removed_and_mode_changes_count(folder, tmp_path):
    memo = tmp_path / "memo.json"
    base = directory_digest(folder, memo)
    (folder / "run.sh").chmod(0o644)
    assert directory_digest(folder, memo) == directory_digest(folder) != base
    (folder / "pkg" / "m0.py").unlink()
    (folder / "pkg" / "new.py").write_text("n = 1\n")
    assert directory_digest(folder, memo) == directory_digest(folder)


def test_racily_fresh_files_are_not_remembered(folder, tmp_path, reads):
    """A file written within the racy window of the memo could change again in the same clock tick."""
    memo = tmp_path / "memo.json"
    fresh = folder / "pkg" / "fresh.py"
    fresh.write_text("f = 1\n")
    ahead = time.time() + 60  # inside the window however long the box takes to get to the digest
    os.utime(fresh, (ahead, ahead))
    directory_digest(folder, memo)
    assert "pkg/fresh.py" not in json.loads(memo.read_text())["entries"]
    assert RACY_NS > 0
    reads.clear()
    directory_digest(folder, memo)
    assert reads == ["fresh.py"]


@pytest.mark.parametrize("content", [b"not json", b"[1, 2]", b'{"pkg/m1.py": [1]}', b'{"a": "b"}'])
def test_a_broken_memo_is_no_memo(folder, tmp_path, content):
    memo = tmp_path / "memo.json"
    memo.write_bytes(content)
    assert directory_digest(folder, memo) == directory_digest(folder)
