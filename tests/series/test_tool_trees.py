"""`forklift tree` and `check` held to `quilt push -a` and `git apply` on the cases they once disagreed on.

Each case is a small upstream folder (with exec bits) and a series; quilt, git apply and forklift
(under each applier) patch it, and the whole trees are compared: every path, its kind (file,
folder, link), its executable bit, a link's target and a file's bytes.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.series.distro import distribution, forklift

pytestmark = pytest.mark.skipif(shutil.which("quilt") is None, reason="SKIPPED: quilt is not installed")

SEQ = "".join(f"{i}\n" for i in range(1, 11))


def listing(root: Path, ignore: tuple[str, ...] = ()) -> dict[str, tuple]:
    """Every entry below `root` as (kind, exec bit, bytes or link target), but for the top-level `ignore`."""
    out: dict[str, tuple] = {}
    for place in sorted(root.rglob("*")):
        rel = place.relative_to(root)
        if rel.parts[0] in ignore:
            continue
        mode = place.lstat().st_mode
        if stat.S_ISLNK(mode):
            out[rel.as_posix()] = ("link", os.readlink(place))
        elif stat.S_ISDIR(mode):
            out[rel.as_posix()] = ("folder",)
        else:
            out[rel.as_posix()] = ("file", bool(mode & stat.S_IXUSR), place.read_bytes())
    return out


def _upstream(tmp_path: Path, files: dict[str, str], executable: tuple[str, ...] = ()) -> Path:
    root = tmp_path / "upstream"
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    for path in executable:
        (root / path).chmod(0o755)
    return root


def _quilt(upstream: Path, patches: dict[str, str], work: Path) -> tuple[bool, dict[str, tuple], str]:
    tree = work / "quilt"
    shutil.copytree(upstream, tree, symlinks=True)
    (tree / "patches").mkdir()
    for name, text in patches.items():
        (tree / "patches" / name).write_text(text)
    (tree / "patches" / "series").write_text("".join(f"{n}\n" for n in patches))
    env = {**os.environ, "QUILT_PATCHES": "patches", "LC_ALL": "C"}
    proc = subprocess.run(
        ["quilt", "--quiltrc", "/dev/null", "push", "-a", "--fuzz=0"], cwd=tree, env=env, capture_output=True, text=True
    )
    return proc.returncode == 0, listing(tree, ignore=(".pc", "patches")), proc.stdout + proc.stderr


def _git(upstream: Path, patches: dict[str, str], work: Path) -> tuple[bool, dict[str, tuple], str]:
    tree = work / "git"
    shutil.copytree(upstream, tree, symlinks=True)
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(work), "LC_ALL": "C"}
    said = ""
    for text in patches.values():
        proc = subprocess.run(["git", "apply", "-v"], cwd=tree, env=env, input=text, capture_output=True, text=True)
        said += proc.stdout + proc.stderr
        if proc.returncode:
            return False, listing(tree), said
    return True, listing(tree), said


def _forklift_tree(tmp_path: Path, upstream: Path, patches: dict[str, str], applier: str):
    dist = distribution(tmp_path / applier, {}, patches, series_keys=f'applier = "{applier}"')
    (dist / "forklift.toml").write_text(
        (dist / "forklift.toml").read_text().replace(str(tmp_path / applier / "upstream"), str(upstream))
    )
    from forklift.source.hashing import directory_digest

    text = (dist / "forklift.toml").read_text()
    old_digest = text.split('sha256 = "', 1)[1].split('"', 1)[0]
    (dist / "forklift.toml").write_text(text.replace(old_digest, directory_digest(upstream)))
    out = tmp_path / f"out-{applier}"
    proc = forklift("-c", str(dist), "tree", str(out))
    check = forklift("-c", str(dist), "check")
    return proc, (listing(out, ignore=("FORKLIFT-TREE.json",)) if out.exists() else None), check


def _held_to_the_tools(tmp_path: Path, files: dict[str, str], patches: dict[str, str], executable=()):
    upstream = _upstream(tmp_path, files, executable)
    quilt = _quilt(upstream, patches, tmp_path / "peer-quilt")
    git = _git(upstream, patches, tmp_path / "peer-git")
    ours = {applier: _forklift_tree(tmp_path, upstream, patches, applier) for applier in ("gnu-patch", "git-apply")}
    return quilt, git, ours


MODES = {
    "modes.patch": (
        "diff --git a/new.sh b/new.sh\nnew file mode 100755\nindex 0000000..1111111\n--- /dev/null\n+++ b/new.sh\n"
        "@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo new\n"
        "diff --git a/tool b/tool\nold mode 100644\nnew mode 100755\n"
        "diff --git a/run.sh b/run.sh\nold mode 100755\nnew mode 100644\n"
        "diff --git a/kept.sh b/kept.sh\nindex 2222222..3333333 100644\n--- a/kept.sh\n+++ b/kept.sh\n"
        "@@ -4,3 +4,3 @@\n 4\n-5\n+five\n 6\n"
    ),
    "more.patch": (
        "diff --git a/tool b/tool\nold mode 100755\nnew mode 100755\nindex 4444444..5555555\n--- a/tool\n+++ b/tool\n"
        "@@ -1,3 +1,3 @@\n-1\n+one\n 2\n 3\n"
    ),
}


def test_modes_new_executables_and_mode_changes_equal_quilt_and_git(tmp_path):
    files = {"tool": SEQ, "run.sh": SEQ, "kept.sh": SEQ}
    quilt, git, ours = _held_to_the_tools(tmp_path, files, MODES, executable=("run.sh", "kept.sh"))
    assert quilt[0] and git[0], quilt[2] + git[2]
    assert quilt[1] == git[1]
    assert quilt[1]["new.sh"][:2] == ("file", True) and quilt[1]["tool"][:2] == ("file", True)
    assert quilt[1]["run.sh"][:2] == ("file", False) and quilt[1]["kept.sh"][:2] == ("file", True)
    for applier, (proc, tree, _) in ours.items():
        assert proc.returncode == 0, (applier, proc.stderr)
        assert tree == quilt[1], applier


def test_a_folder_the_series_empties_is_removed_as_quilt_and_git_do(tmp_path):
    files = {"keep.c": SEQ, "gone/deeper/only.c": "x\n", "half/a.c": "a\n", "half/b.c": "b\n"}
    patches = {
        "rm.patch": (
            "diff --git a/gone/deeper/only.c b/gone/deeper/only.c\ndeleted file mode 100644\nindex 1111111..0000000\n"
            "--- a/gone/deeper/only.c\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
            "--- a/half/a.c\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n"
        )
    }
    quilt, git, ours = _held_to_the_tools(tmp_path, files, patches)
    assert quilt[0] and git[0]
    assert quilt[1] == git[1] and "gone" not in quilt[1] and "half" in quilt[1]
    for applier, (proc, tree, _) in ours.items():
        assert proc.returncode == 0, (applier, proc.stderr)
        assert tree == quilt[1], applier


SUBMODULE_RENAME = {
    "sub.patch": (
        "diff --git a/sub/old.c b/sub/new.c\nsimilarity index 90%\nrename from old.c\nrename to new.c\n"
        "index 1111111..2222222 100644\n--- a/sub/old.c\n+++ b/sub/new.c\n@@ -4,3 +4,3 @@\n 4\n-5\n+five\n 6\n"
    ),
    "after.patch": "--- a/sub/new.c\n+++ b/sub/new.c\n@@ -8,3 +8,3 @@\n 8\n-9\n+nine\n 10\n",
}


def test_a_rename_written_inside_a_submodule_applies_as_gnu_patch_and_is_refused_as_git_does(tmp_path):
    quilt, git, ours = _held_to_the_tools(tmp_path, {"sub/old.c": SEQ}, SUBMODULE_RENAME)
    assert quilt[0] and "sub/old.c" not in quilt[1] and quilt[1]["sub/new.c"][2].count(b"five\n") == 1
    assert not git[0] and "inconsistent old filename" in git[2]
    proc, tree, check = ours["gnu-patch"]
    assert proc.returncode == 0, proc.stderr
    assert tree == quilt[1]
    assert check.returncode == 0 and "git apply would refuse this patch" in check.stdout
    assert "inconsistent old filename" in check.stdout
    proc, tree, check = ours["git-apply"]
    assert proc.returncode == 1 and tree is None and "sub.patch: fails" in proc.stderr
    assert check.returncode == 1 and "inconsistent old filename" in check.stdout
    assert "GNU patch would apply" in check.stdout


NAME_MISMATCH = {
    "name.patch": (
        "diff --git a/f.c b/f.c\nindex 1111111..2222222 100644\n"
        "--- a/f\t2024-01-01 00:00:00.000000000 +0000\n+++ b/f.c\t2024-01-01 00:00:00.000000000 +0000\n"
        "@@ -2,3 +2,3 @@\n 2\n-3\n+three\n 4\n"
    )
}


def test_a_dashes_name_that_differs_from_the_diff_git_line_is_refused_as_git_does(tmp_path):
    quilt, git, ours = _held_to_the_tools(tmp_path, {"f.c": SEQ}, NAME_MISMATCH)
    assert quilt[0] and b"three\n" in quilt[1]["f.c"][2]
    assert not git[0] and "f => f.c" in git[2]
    proc, tree, check = ours["gnu-patch"]
    assert proc.returncode == 0 and tree == quilt[1]
    assert "git apply would refuse it: f: file not in the tree" in check.stdout
    proc, tree, check = ours["git-apply"]
    assert proc.returncode == 1 and tree is None
    assert (
        check.returncode == 1 and "f: file not in the tree" in check.stdout and "GNU patch would apply" in check.stdout
    )
