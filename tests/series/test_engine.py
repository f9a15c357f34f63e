"""Engine cases the random cross-check does not reach: whole-file operations, EOF newlines, series order,
and every case of issue #9, each run through the real GNU patch and git apply on the same input."""

from __future__ import annotations

import subprocess

import pytest

from forklift.fsio import tree_reader
from forklift.series.apply import APPLIERS, Link, PatchResult, apply_patch, apply_series
from forklift.series.model import PatchError, parse_patch
from tests.series.peers import git_apply, gnu_patch, really_apply, write_tree

BASE = b"one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
NUMBERS = b"".join(b"%d\n" % i for i in range(1, 61))


def _reader(files: dict[str, bytes]):
    return lambda path: files.get(path)


def test_create_delete_and_already_applied(tmp_path):
    create = "diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"
    result = apply_patch(_reader({}), parse_patch("c.patch", create), "gnu-patch")
    assert result.status == "exact" and result.files == {"new.txt": b"hello\nworld\n"}
    assert (
        apply_patch(_reader({"new.txt": b"hello\nworld\n"}), parse_patch("c.patch", create), "gnu-patch").status
        == "already-applied"
    )
    clash = apply_patch(_reader({"new.txt": b"other\n"}), parse_patch("c.patch", create), "gnu-patch")
    assert clash.status == "fails" and "already exists" in str(clash.problems[0])

    delete = "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-hello\n-world\n"
    assert apply_patch(_reader({"old.txt": b"hello\nworld\n"}), parse_patch("d.patch", delete), "gnu-patch").files == {
        "old.txt": None
    }
    assert apply_patch(_reader({}), parse_patch("d.patch", delete), "gnu-patch").status == "already-applied"
    assert (
        apply_patch(_reader({"old.txt": b"hello\nthere\n"}), parse_patch("d.patch", delete), "gnu-patch").status
        == "fails"
    )


def test_missing_file_is_its_own_verdict():
    text = "--- a/gone.py\n+++ b/gone.py\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
    result = apply_patch(_reader({}), parse_patch("m.patch", text), "gnu-patch")
    assert result.status == "file-missing"
    assert str(result.problems[0]) == "gone.py: file not in the tree"


def test_no_newline_at_end_of_file_matches_git(tmp_path):
    before = {"f.txt": b"one\ntwo\nthree"}
    after = {"f.txt": b"one\ntwo\nTHREE\n"}
    text = (
        subprocess.run(
            ["git", "diff", "--no-index", "a/f.txt", "b/f.txt"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        if write_tree(tmp_path / "a", before) or write_tree(tmp_path / "b", after) is None
        else ""
    )
    text = text.replace("a/a/f.txt", "a/f.txt").replace("b/b/f.txt", "b/f.txt")
    assert "\\ No newline at end of file" in text
    result = apply_patch(_reader(before), parse_patch("n.patch", text), "gnu-patch")
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
    result = apply_patch(_reader(files), parse_patch("r.patch", text), "gnu-patch")
    assert result.status == "exact"
    assert result.files == {"new/name.py": b"one\nTWO\nthree\n", "old/name.py": None}


def test_series_applies_in_order_and_a_failed_patch_leaves_no_trace():
    first = "--- a/f.txt\n+++ b/f.txt\n@@ -2,3 +2,3 @@\n two\n-three\n+THREE\n four\n"
    second = "--- a/f.txt\n+++ b/f.txt\n@@ -2,3 +2,3 @@\n two\n-THREE\n+3\n four\n"
    broken = "--- a/f.txt\n+++ b/f.txt\n@@ -5,3 +5,3 @@\n five\n-nope\n+x\n seven\n"
    patches = [parse_patch("1.patch", first), parse_patch("2.patch", broken), parse_patch("3.patch", second)]
    results, overlay = apply_series(_reader({"f.txt": BASE}), patches, "gnu-patch")
    assert [r.status for r in results] == ["exact", "fails", "exact"]
    assert overlay.read("f.txt") == b"one\ntwo\n3\nfour\nfive\nsix\nseven\n"
    assert list(overlay.changed()) == ["f.txt"]


def test_partly_applied_when_some_hunks_are_already_there():
    text = (
        "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n-one\n+ONE\n two\n three\n"
        "@@ -5,3 +5,3 @@\n five\n-six\n+SIX\n seven\n"
    )
    upstream = b"ONE\ntwo\nthree\nfour\nfive\nsix\nseven\n"
    result = apply_patch(_reader({"f.txt": upstream}), parse_patch("p.patch", text), "gnu-patch")
    assert [h.status for h in result.hunks] == ["already-applied", "exact"]
    assert result.status == "partly-applied" and not result.applies and result.files == {}


def test_a_file_with_crlf_endings_is_patched_byte_for_byte(tmp_path):
    """Upstream ships CRLF files (vllm 0.32.0: vllm/config/fault_tolerance.py): a patch to one carries
    CRLF on its content lines, which is not noise."""
    from forklift.series.render import file_diff

    before = b"one\r\ntwo\r\nthree\r\nfour\r\n"
    after = b"one\r\nTWO\r\nthree\r\nfour\r\n"
    text = file_diff("win.py", before, after)
    result = apply_patch(_reader({"win.py": before}), parse_patch("crlf.patch", text), "gnu-patch")
    assert result.status == "exact" and result.files["win.py"] == after
    write_tree(tmp_path, {"win.py": before})
    assert git_apply(tmp_path, text).applies


# --- every case of issue #9, held to the real GNU patch and git apply on the same input ----------------


def _held(tmp_path, files: dict[str, bytes], text: str, name: str = "case.patch") -> dict[str, PatchResult]:
    """Each applier's verdict and bytes equal its real tool's (quilt's `patch -f --fuzz=0`, `git apply`)."""
    write_tree(tmp_path / "pristine", files)
    patch = parse_patch(name, text)
    results = {}
    for applier in APPLIERS:
        ours = apply_patch(tree_reader(tmp_path / "pristine"), patch, applier)
        write_tree(tmp_path / applier, files)
        ok, after, output = really_apply(tmp_path / applier, applier, text.encode("utf-8", "surrogateescape"))
        assert ours.applies == ok, f"{applier}: forklift says {ours.status} {ours.reasons()}; the tool: {output}"
        if ok:
            expected = {**files, **ours.files}
            assert after == {p: c for p, c in expected.items() if c is not None}, applier
        results[applier] = ours
    return results


def test_asymmetric_context_mid_file_is_not_pinned_to_the_start(tmp_path):
    """2 leading, 3 trailing context lines at line 38: GNU pins to the start only when stated at line <= 1."""
    text = "--- a/f\n+++ b/f\n@@ -38,6 +38,6 @@\n 38\n 39\n-40\n+FORTY\n 41\n 42\n 43\n"
    results = _held(tmp_path, {"f": NUMBERS}, text)
    assert all(r.status == "exact" and not r.disagreements for r in results.values())


def test_less_trailing_context_mid_file_splits_gnu_and_git(tmp_path):
    """3 leading, 2 trailing: GNU patch must match at the file's end (so refuses at fuzz 0), git applies."""
    text = "--- a/f\n+++ b/f\n@@ -37,6 +37,6 @@\n 37\n 38\n 39\n-40\n+FORTY\n 41\n 42\n"
    results = _held(tmp_path, {"f": NUMBERS}, text)
    assert results["gnu-patch"].status == "fuzz" and results["git-apply"].status == "exact"
    assert results["gnu-patch"].disagreements == ("f hunk #1 (line 37): git apply would apply this hunk",)
    assert results["git-apply"].disagreements == ("f hunk #1 (line 37): GNU patch would refuse this hunk",)


def test_new_file_without_dev_null_is_created(tmp_path):
    text = "--- a/new.py\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n"
    results = _held(tmp_path, {"f": NUMBERS}, text)
    assert all(r.status == "exact" and r.files == {"new.py": b"a = 1\nb = 2\n"} for r in results.values())


def test_diff_u0_hunks_apply_under_gnu_and_git_refuses(tmp_path):
    """dpkg-source runs GNU patch at fuzz 0, which applies -U0 hunks (at an offset too); git apply
    without --unidiff-zero refuses them."""
    shifted = b"0a\n0b\n" + NUMBERS
    text = "--- a/f\n+++ b/f\n@@ -10 +10 @@\n-10\n+TEN\n@@ -15,0 +16,1 @@\n+after 15\n"
    results = _held(tmp_path, {"f": shifted}, text)
    gnu = results["gnu-patch"]
    assert gnu.status == "offset" and [h.offset for h in gnu.hunks] == [2, 2]
    assert gnu.files["f"].splitlines()[11:19] == [b"TEN", b"11", b"12", b"13", b"14", b"15", b"after 15", b"16"]
    assert results["git-apply"].status == "fails"
    assert "git apply would refuse this hunk" in gnu.disagreements[0]


def test_blank_line_after_the_last_hunk_is_not_part_of_it(tmp_path):
    text = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n 1\n-2\n+TWO\n 3\n\n"
    results = _held(tmp_path, {"f": NUMBERS}, text)
    assert all(r.status == "exact" for r in results.values())


def test_copy_keeps_the_source(tmp_path):
    text = "diff --git a/f b/g\nsimilarity index 90%\ncopy from f\ncopy to g\n--- a/f\n+++ b/g\n@@ -1,3 +1,3 @@\n 1\n-2\n+TWO\n 3\n"
    results = _held(tmp_path, {"f": NUMBERS}, text)
    for result in results.values():
        assert result.status == "exact" and set(result.files) == {"g"}  # f is not deleted
        assert result.files["g"].startswith(b"1\nTWO\n3\n")


def test_git_quoted_paths_are_unquoted(tmp_path):
    text = (
        'diff --git "a/a b.py" "b/a b.py"\n--- "a/a b.py"\n+++ "b/a b.py"\n@@ -1,3 +1,3 @@\n 1\n-2\n+TWO\n 3\n'
        'diff --git "a/caf\\303\\251.py" "b/caf\\303\\251.py"\n--- "a/caf\\303\\251.py"\n+++ "b/caf\\303\\251.py"\n'
        "@@ -1,3 +1,3 @@\n 1\n-2\n+TWO\n 3\n"
    )
    results = _held(tmp_path, {"a b.py": NUMBERS, "café.py": NUMBERS}, text)
    assert all(set(r.files) == {"a b.py", "café.py"} for r in results.values())


@pytest.mark.parametrize(
    "text,message",
    [
        (
            "--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+x\n",
            "case.patch: line 1: both sides of the diff are /dev/null",
        ),
        (
            "diff --git a/x b/x\n--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+x\n",
            "case.patch: line 2: both sides of the diff are /dev/null",
        ),
        (
            "--- a/f\n+++ b/f\n@@ -999999999999999999999,3 +1,3 @@\n 1\n-2\n+TWO\n 3\n",
            "case.patch: line 3: line number 999999999999999999999 is too large",
        ),
        ("--- a/f\x00x\n+++ b/f\x00x\n@@ -1,3 +1,3 @@\n 1\n-2\n+TWO\n 3\n", "contains a NUL byte"),
    ],
)
def test_inputs_no_tool_reads_soundly_are_one_line(tmp_path, text, message):
    """GNU says 'No file to patch' for /dev/null on both sides while git makes a folder `dev`; GNU calls
    the number too large while git wraps it; both cut a name at a NUL. forklift refuses, in one line."""
    with pytest.raises(PatchError) as exc:
        parse_patch("case.patch", text)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_far_stated_line_lands_where_both_tools_put_it(tmp_path):
    text = "--- a/f\n+++ b/f\n@@ -99999999,3 +99999999,3 @@\n 1\n-2\n+TWO\n 3\n"
    results = _held(tmp_path, {"f": NUMBERS}, text)
    assert all(r.hunks[0].offset == -99999998 for r in results.values())
    write_tree(tmp_path / "check", {"f": NUMBERS})
    assert gnu_patch(tmp_path / "check", text).offsets == (-99999998,)


def test_a_symlink_in_the_tree_is_refused_as_both_tools_do(tmp_path):
    text = "--- a/l\n+++ b/l\n@@ -1,3 +1,3 @@\n 1\n-2\n+TWO\n 3\n"
    results = _held(tmp_path, {"f": NUMBERS, "l": Link(b"f")}, text)
    for result in results.values():
        assert result.status == "fails" and "is a symbolic link" in result.reasons()[0]


def test_a_patch_creating_a_symlink_creates_one(tmp_path):
    text = (
        "diff --git a/lnk b/lnk\nnew file mode 120000\nindex 0000000..1234567\n--- /dev/null\n+++ b/lnk\n"
        "@@ -0,0 +1 @@\n+f\n\\ No newline at end of file\n"
    )
    results = _held(tmp_path, {"f": NUMBERS}, text)
    for result in results.values():
        assert isinstance(result.files["lnk"], Link) and result.files["lnk"] == b"f"


DATALESS = (
    "diff --git a/x.bin b/x.bin\nnew file mode 100644\nindex 0000000..e69de29\nBinary files /dev/null and b/x.bin differ\n"
    "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n 1\n-2\n+TWO\n 3\n"
)


def test_a_dataless_binary_stanza_follows_the_applier(tmp_path):
    """GNU patch creates an empty file (and patches the rest); git apply refuses the whole patch."""
    results = _held(tmp_path, {"f": NUMBERS}, DATALESS)
    assert results["gnu-patch"].files["x.bin"] == b"" and results["gnu-patch"].status == "exact"
    assert results["git-apply"].status == "fails"
    assert "binary diff without data" in results["git-apply"].reasons()[0]
    assert results["gnu-patch"].disagreements == (
        "git apply would refuse it: x.bin: binary diff without data (git apply refuses it)",
    )


def test_a_dataless_binary_stanza_does_not_take_down_the_series():
    before = parse_patch("1.patch", "--- a/f\n+++ b/f\n@@ -5,3 +5,3 @@\n 5\n-6\n+SIX\n 7\n")
    after = parse_patch("3.patch", "--- a/f\n+++ b/f\n@@ -8,3 +8,3 @@\n 8\n-9\n+NINE\n 10\n")
    patches = [before, parse_patch("2.patch", DATALESS), after]
    results, overlay = apply_series(_reader({"f": NUMBERS}), patches, "git-apply")
    assert [r.status for r in results] == ["exact", "fails", "exact"]
    assert overlay.read("f").splitlines()[4:9] == [b"5", b"SIX", b"7", b"8", b"NINE"]


def test_dev_null_creation_over_an_empty_file_splits_gnu_and_git(tmp_path):
    text = "--- /dev/null\n+++ b/e\n@@ -0,0 +1,2 @@\n+a\n+b\n"
    results = _held(tmp_path, {"e": b""}, text)
    assert results["gnu-patch"].files == {"e": b"a\nb\n"}
    assert results["git-apply"].reasons() == ("e: file to create already exists",)


def test_a_patch_that_does_not_land_says_what_did(tmp_path):
    """`landed` holds the hunks that landed, `reasons()` one line per hunk that did not (flip uses both)."""
    text = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n 1\n-2\n+TWO\n 3\n@@ -20,3 +20,3 @@\n 20\n-nope\n+x\n 22\n"
    results = _held(tmp_path, {"f": NUMBERS}, text)
    for result in results.values():
        assert result.status == "fails" and result.files == {}
        assert result.landed["f"].startswith(b"1\nTWO\n3\n")
        assert result.reasons() == ("f hunk #2 (line 20): does not apply",)


def test_a_name_with_spaces_and_no_tab_is_cut_by_gnu_but_not_by_git(tmp_path):
    """Debian's python3.11 frame_dealloc-crash.diff creates `Misc/NEWS.d/next/Core and Builtins/...`
    in a plain diff: GNU patch ends an unquoted name at a space unless a tab follows; git does not."""
    text = "--- /dev/null\n+++ b/Core and Builtins/news.rst\n@@ -0,0 +1 @@\n+fixed\n"
    results = _held(tmp_path, {"f": NUMBERS}, text)
    assert set(results["gnu-patch"].files) == {"Core"}
    assert set(results["git-apply"].files) == {"Core and Builtins/news.rst"}


def test_an_empty_patch_file_applies_under_quilt_and_not_under_git(tmp_path):
    """Debian's procps lists an empty `ps_checks`: quilt skips a 0-byte patch, git apply refuses it."""
    results = _held(tmp_path, {"f": NUMBERS}, "")
    assert results["gnu-patch"].status == "exact" and results["gnu-patch"].files == {}
    assert results["git-apply"].reasons() == (
        "case.patch: empty patch file (quilt skips it; git apply refuses it: no valid patches in input)",
    )


def test_a_path_through_a_symlinked_folder_follows_the_applier(tmp_path):
    """GNU patch follows a folder link inside the tree; git apply refuses 'beyond a symbolic link'."""
    text = "--- a/d/f\n+++ b/d/f\n@@ -1,3 +1,3 @@\n 1\n-2\n+TWO\n 3\n"
    write_tree(tmp_path / "pristine", {"real/f": NUMBERS, "d": Link(b"real")})
    patch = parse_patch("case.patch", text)
    for applier in APPLIERS:
        ours = apply_patch(tree_reader(tmp_path / "pristine"), patch, applier)
        write_tree(tmp_path / applier, {"real/f": NUMBERS, "d": Link(b"real")})
        ok, after, output = really_apply(tmp_path / applier, applier, text.encode())
        assert ours.applies == ok, output
        if ok:
            assert after["real/f"] == ours.files["d/f"]
    assert "beyond a symbolic link" in apply_patch(tree_reader(tmp_path / "pristine"), patch, "git-apply").reasons()[0]
