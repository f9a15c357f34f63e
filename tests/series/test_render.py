"""The normalized diff behind the overlay hash is a real diff: GNU patch and our engine apply it exactly."""

from __future__ import annotations

import random

import pytest

from forklift.series.apply import apply_patch
from forklift.series.model import parse_patch
from forklift.series.render import file_diff
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
