"""Engine cases the random cross-check does not reach: whole-file operations, EOF newlines, series order."""

from __future__ import annotations

import subprocess

from forklift.series.engine import apply_patch, apply_series
from forklift.series.model import parse_patch
from tests.series.peers import git_apply, write_tree

BASE = b"one\ntwo\nthree\nfour\nfive\nsix\nseven\n"


def _reader(files: dict[str, bytes]):
    return lambda path: files.get(path)


def test_create_delete_and_already_applied(tmp_path):
    create = "diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"
    result = apply_patch(_reader({}), parse_patch("c.patch", create))
    assert result.status == "exact" and result.files == {"new.txt": b"hello\nworld\n"}
    assert (
        apply_patch(_reader({"new.txt": b"hello\nworld\n"}), parse_patch("c.patch", create)).status == "already-applied"
    )
    clash = apply_patch(_reader({"new.txt": b"other\n"}), parse_patch("c.patch", create))
    assert clash.status == "fails" and "already exists" in str(clash.problems[0])

    delete = "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-hello\n-world\n"
    assert apply_patch(_reader({"old.txt": b"hello\nworld\n"}), parse_patch("d.patch", delete)).files == {
        "old.txt": None
    }
    assert apply_patch(_reader({}), parse_patch("d.patch", delete)).status == "already-applied"
    assert apply_patch(_reader({"old.txt": b"hello\nthere\n"}), parse_patch("d.patch", delete)).status == "fails"


def test_missing_file_is_its_own_verdict():
    text = "--- a/gone.py\n+++ b/gone.py\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
    result = apply_patch(_reader({}), parse_patch("m.patch", text))
    assert result.status == "file-missing"
    assert str(result.problems[0]) == "gone.py: file not in the tree"


def test_no_newline_at_end_of_file_matches_git(tmp_path):
    before = {"f.txt": b"one\ntwo\nthree"}
    after = {"f.txt": b"one\ntwo\nTHREE\n"}
    text = (
        subprocess.run(
            ["git", "diff", "--no-index", "a/f.txt", "b/f.txt"], cwd=tmp_path, capture_output=True, text=True
        ).stdout
        if write_tree(tmp_path / "a", before) or write_tree(tmp_path / "b", after) is None
        else ""
    )
    text = text.replace("a/a/f.txt", "a/f.txt").replace("b/b/f.txt", "b/f.txt")
    assert "\\ No newline at end of file" in text
    result = apply_patch(_reader(before), parse_patch("n.patch", text))
    assert result.status == "exact"
    assert result.files["f.txt"] == after["f.txt"]
    write_tree(tmp_path / "t", before)
    assert git_apply(tmp_path / "t", text).applies


def test_rename_with_change():
    text = (
        "diff --git a/old/name.py b/new/name.py\nsimilarity index 80%\nrename from old/name.py\nrename to new/name.py\n"
        "--- a/old/name.py\n+++ b/new/name.py\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
    )
    files = {"old/name.py": b"one\ntwo\nthree\n"}
    result = apply_patch(_reader(files), parse_patch("r.patch", text))
    assert result.status == "exact"
    assert result.files == {"new/name.py": b"one\nTWO\nthree\n", "old/name.py": None}


def test_series_applies_in_order_and_a_failed_patch_leaves_no_trace():
    first = "--- a/f.txt\n+++ b/f.txt\n@@ -2,3 +2,3 @@\n two\n-three\n+THREE\n four\n"
    second = "--- a/f.txt\n+++ b/f.txt\n@@ -2,3 +2,3 @@\n two\n-THREE\n+3\n four\n"
    broken = "--- a/f.txt\n+++ b/f.txt\n@@ -5,3 +5,3 @@\n five\n-nope\n+x\n seven\n"
    patches = [parse_patch("1.patch", first), parse_patch("2.patch", broken), parse_patch("3.patch", second)]
    results, overlay = apply_series(_reader({"f.txt": BASE}), patches)
    assert [r.status for r in results] == ["exact", "fails", "exact"]
    assert overlay.read("f.txt") == b"one\ntwo\n3\nfour\nfive\nsix\nseven\n"
    assert list(overlay.changed()) == ["f.txt"]


def test_partly_applied_when_some_hunks_are_already_there():
    text = (
        "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n-one\n+ONE\n two\n three\n"
        "@@ -5,3 +5,3 @@\n five\n-six\n+SIX\n seven\n"
    )
    upstream = b"ONE\ntwo\nthree\nfour\nfive\nsix\nseven\n"
    result = apply_patch(_reader({"f.txt": upstream}), parse_patch("p.patch", text))
    assert [h.status for h in result.hunks] == ["already-applied", "exact"]
    assert result.status == "partly-applied" and not result.applies and result.files == {}


def test_a_file_with_crlf_endings_is_patched_byte_for_byte(tmp_path):
    """Upstream ships CRLF files (vllm 0.32.0: vllm/config/fault_tolerance.py): a patch to one carries
    CRLF on its content lines, which is not noise."""
    from forklift.series.render import file_diff

    before = b"one\r\ntwo\r\nthree\r\nfour\r\n"
    after = b"one\r\nTWO\r\nthree\r\nfour\r\n"
    text = file_diff("win.py", before, after)
    result = apply_patch(_reader({"win.py": before}), parse_patch("crlf.patch", text))
    assert result.status == "exact" and result.files["win.py"] == after
    write_tree(tmp_path, {"win.py": before})
    assert git_apply(tmp_path, text).applies
