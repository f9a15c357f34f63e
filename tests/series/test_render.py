"""The normalized diff behind the overlay hash is a real diff: GNU patch and our engine apply it exactly."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forklift.fsio import Executable
from forklift.series.apply import apply_patch, split_lines
from forklift.series.model import parse_patch
from forklift.series.render import _matched, _one_side, file_diff, overlay_hash, patches_md
from tests.series.peers import gnu_patch_apply, write_tree


def _pairs(count: int, seed: int):
    rng = random.Random(seed)
    for _ in range(count):
        old = [f"l{rng.randrange(30)}\n" for _ in range(rng.randrange(1, 60))]  # repeats make diffs ambiguous
        new = list(old)
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(len(new) + 1)
            if rng.random() < 0.5 and i < len(new):
                del new[i]
            else:
                new.insert(i, f"x{rng.randrange(9)}\n")
        if rng.random() < 0.2 and new:
            new[-1] = new[-1].rstrip("\n")
        if new != old:
            yield "".join(old).encode(), "".join(new).encode()


def test_engine_applies_every_rendered_diff_exactly():
    for before, after in _pairs(1000, 7):
        result = apply_patch(
            lambda p, b=before: b, parse_patch("d.patch", file_diff("f.txt", before, after)), "gnu-patch"
        )
        assert result.status == "exact" and result.files["f.txt"] == after


@pytest.mark.parametrize("index,pair", list(enumerate(_pairs(40, 11))))
def test_gnu_patch_applies_rendered_diffs(tmp_path, index, pair):
    before, after = pair
    write_tree(tmp_path, {"f.txt": before})
    assert gnu_patch_apply(tmp_path, file_diff("f.txt", before, after), "f.txt") == after


def test_created_and_deleted_files_render_as_git_does():
    created = file_diff("n.txt", None, b"a\n")
    assert created.splitlines()[:4] == [
        "diff --git a/n.txt b/n.txt",
        "new file mode 100644",
        "--- /dev/null",
        "+++ b/n.txt",
    ]
    deleted = file_diff("n.txt", b"a\n", None)
    assert deleted.splitlines()[1:4] == ["deleted file mode 100644", "--- a/n.txt", "+++ /dev/null"]
    assert "@@ -1 +0,0 @@" in deleted


@pytest.mark.parametrize("odd", ["\x0c", "\u2028", "\x1c", "\r"])
def test_lines_split_on_newline_only(odd):
    """str.splitlines would cut these lines in two and the rendered diff would not apply."""
    before = f"a\nb{odd}c\nd\ne\n".encode()
    after = f"a\nb{odd}c\nD\ne\n".encode()
    result = apply_patch(lambda p: before, parse_patch("d.patch", file_diff("f.txt", before, after)), "gnu-patch")
    assert result.status == "exact" and result.files["f.txt"] == after


def test_the_overlay_hash_keeps_its_definition():
    """Receipts already written carry overlay hashes: the same changes must hash as they always did (the
    value was taken from the renderer before it wrote bytes and drew created files without matching)."""
    changed = {
        "new.txt": (None, b"one\ntwo"),
        "empty.txt": (None, b""),
        "gone.sh": (Executable(b"#!/bin/sh\necho bye\n"), None),
        "caf\udcc3\udca9.py": (b"x = 1\n\xff\n", b"x = 2\n\xff\n"),  # a name and a line that are not UTF-8
        "run.sh": (b"echo\n", Executable(b"echo\n")),
        "tail.c": (b"a\nb\nc\nd\ne\nf\ng\nh\n", b"a\nB\nc\nd\ne\nf\ng\nh"),
    }
    assert overlay_hash(changed) == "sha256:b384d3fdc1f3cec35251964403321aec4f27bbc414cde7fb4b394d2b21fb3dd5"


@given(st.lists(st.sampled_from([b"a\n", b"\n", b"b\r\n", b"\xff\n", b"+\n", b"\\\n"]), max_size=12), st.booleans())
def test_a_created_or_deleted_file_renders_as_matching_would(lines, cut):
    """The one-sided hunk is drawn from the content whole; it is the one matching the lines gives."""
    content = b"".join(lines)
    if cut and content:
        content = content[:-1]  # no newline at the end
    assert _one_side(b"+", content) == _matched([], split_lines(content))
    assert _one_side(b"-", content) == _matched(split_lines(content), [])


def test_patches_md_names_each_exported_patch_s_export_point():
    """A series exported from a fork gets an `export point` column (the fork commit, from Export-Commit:);
    a hand-written series keeps the table it had, and a field that is no commit id is not shown."""
    diff = "--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-a\n+b\n"
    commit = "0123456789abcdef" * 2 + "01234567"
    exported = parse_patch("0001-x.patch", f"Description: x\nExport-Commit: {commit}\n---\n{diff}")
    plain = parse_patch("0002-y.patch", f"Description: y\nExport-Commit: not|a commit\n---\n{diff}")
    text = patches_md([exported, plain])
    assert "| +/- | export point |" in text
    assert f"| +1 -1 | `{commit[:12]}` |" in text
    assert "| `0002-y.patch` |" in text and "not|a commit" not in text
    assert "export point" not in patches_md([plain])
