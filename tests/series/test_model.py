"""The series model: quilt series files, headers of other tools, and each bad input's one-line error."""

from __future__ import annotations

from pathlib import Path

import pytest

from forklift.series.model import PatchError, load_series, parse_patch, parse_series_file

DIFF = """diff --git a/pkg/mod.py b/pkg/mod.py
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,3 +1,3 @@
 a = 1
-b = 2
+b = 3
 c = 4
"""


def _series(tmp_path: Path, series: str, files: dict[str, str]) -> Path:
    folder = tmp_path / "patches"
    folder.mkdir()
    (folder / "series").write_text(series)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_series_file_reads_quilt_format():
    text = "# a comment\n\n0001-a.patch\n0002-b.patch -p0  # trailing comment\n"
    assert parse_series_file(text, Path("series")) == [("0001-a.patch", 1), ("0002-b.patch", 0)]


def test_loads_a_series_in_order(tmp_path):
    folder = _series(tmp_path, "b.patch\na.patch\n", {"a.patch": DIFF, "b.patch": DIFF})
    assert [p.name for p in load_series(folder).patches] == ["b.patch", "a.patch"]


@pytest.mark.parametrize(
    "series,files,message",
    [
        ("a.patch\nmissing.patch\n", {"a.patch": DIFF}, "lists 'missing.patch', which is not in"),
        ("a.patch\na.patch\n", {"a.patch": DIFF}, "duplicate entry 'a.patch' (first on line 1)"),
        ("# only comments\n\n", {}, "the series is empty"),
        ("a.patch -R\n", {"a.patch": DIFF}, "unsupported series option '-R'"),
        ("../a.patch\n", {}, "must be a relative path inside the series folder"),
    ],
)
def test_series_and_folder_must_agree(tmp_path, series, files, message):
    folder = _series(tmp_path, series, files)
    with pytest.raises(PatchError, match=None) as exc:
        load_series(folder)
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_missing_series_file_is_named(tmp_path):
    (tmp_path / "patches").mkdir()
    with pytest.raises(PatchError, match="no series file"):
        load_series(tmp_path / "patches")


@pytest.mark.parametrize(
    "text,message",
    [
        (DIFF.replace("a/pkg/mod.py", "a/../etc/passwd"), "escapes the tree"),
        (DIFF.replace("a/pkg/mod.py", "/etc/passwd").replace("b/pkg/mod.py", "/etc/passwd"), "is absolute"),
        (DIFF.replace("@@ -1,3 +1,3 @@", "@@ -1,9 +1,3 @@"), "line 4: pkg/mod.py: hunk at line 1 ends early"),
        (DIFF.replace("\n", "\r\n"), "line 1: CRLF line ending on a diff line"),
        ("Description: only a header\n", "contains no diff"),
        ("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+x\n", "line 1: both sides of the diff are /dev/null"),
        (DIFF.replace("a/pkg/mod.py", "a/pkg/m\0od.py"), "contains a NUL byte"),
        (DIFF.replace("a/pkg/mod.py b/pkg/mod.py", '"a/pkg/m\\nod.py" "b/pkg/m\\nod.py"'), "contains a line break"),
        (DIFF.replace("--- a/pkg/mod.py", '--- "a/pkg/m\\rod.py"'), "m\\rod.py' contains a line break"),
        (DIFF.replace("@@ -1,3 +1,3 @@", "@@ -999999999999999999999,3 +1,3 @@"), "line 4: line number"),
    ],
)
def test_bad_patches_fail_with_one_line_naming_the_patch(text, message):
    with pytest.raises(PatchError) as exc:
        parse_patch("bad.patch", text)
    assert str(exc.value).startswith("bad.patch: ")
    assert message in str(exc.value)


def test_hunk_counts_and_paths():
    patch = parse_patch("p.patch", DIFF)
    (fp,) = patch.files
    assert (fp.old_path, fp.new_path, fp.added, fp.removed) == ("pkg/mod.py", "pkg/mod.py", 1, 1)
    assert patch.paths == ("pkg/mod.py",)


def test_dep3_header():
    text = (
        "Description: Fix the scheduler\n long explanation\nAuthor: Ann <a@x>\nOrigin: upstream, https://x/1\n"
        "Forwarded: https://x/2\nApplied-Upstream: 0.33.0\nKind: backport\nRetires-When: 0.33.0\nLast-Update: 2026-01-01\n---\n"
    ) + DIFF
    h = parse_patch("p.patch", text).header
    assert h.description == "Fix the scheduler"
    assert (h.get("author"), h.get("origin"), h.get("forwarded"), h.get("applied-upstream")) == (
        "Ann <a@x>",
        "upstream, https://x/1",
        "https://x/2",
        "0.33.0",
    )
    assert (h.get("kind"), h.get("retires-when"), h.get("last-update")) == ("backport", "0.33.0", "2026-01-01")


def test_git_format_patch_header_with_electron_style_trailers():
    text = (
        "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n"
        "From: Jane Dev <jane@x.org>\nDate: Tue, 2 Jan 2024 10:00:00 +0000\n"
        "Subject: [PATCH 3/7] feat: add a knob for the\n boot log\n\nWhy we need it.\n\n"
        "Kind: feature\nUpstream: https://github.com/vllm-project/vllm/pull/1\n---\n pkg/mod.py | 2 +-\n\n"
    ) + DIFF
    h = parse_patch("p.patch", text).header
    assert h.description == "feat: add a knob for the boot log"
    assert h.get("author") == "Jane Dev <jane@x.org>"
    assert h.get("kind") == "feature"
    assert h.get("forwarded") == "https://github.com/vllm-project/vllm/pull/1"
    assert h.body == "Why we need it."


def test_debian_quilt_patch_with_index_line_and_free_text():
    text = (
        "Fix the frobnicator.\nBug-Debian: https://bugs.debian.org/1\n\nIndex: pkg/pkg/mod.py\n"
        + "=" * 67
        + "\n"
        + DIFF
    )
    patch = parse_patch("debian.patch", text)
    assert patch.header.description == "Fix the frobnicator."
    assert patch.header.get("bug-debian") == "https://bugs.debian.org/1"
    assert patch.files[0].path == "pkg/mod.py"


def test_folded_mail_header_after_an_empty_field_is_read_not_a_crash():
    text = (
        "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n"
        "From: Jane <j@x.org>\nSubject:\n folded onto the next line\n\nBody.\n---\n"
    ) + DIFF
    assert parse_patch("p.patch", text).header.get("author") == "Jane <j@x.org>"
