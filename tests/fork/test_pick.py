"""`forklift pick REV --repo UPSTREAM`: a real upstream commit between two real releases, carried as a DEP-3 patch.

The upstream clone is tests/fixtures/upstream_git.py: tags v0.32.0 and v0.33.0 hold the real vLLM sdists' trees
and the commits between them are 0.33.0's own changes. The distributions are pinned to the 0.32.0 sdist.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from forklift.series.model import load_series
from tests.cli import EXAMPLE, forklift
from tests.fixtures.pypi import VLLM_032_UPSTREAM
from tests.fixtures.upstream_git import COERCE_FILES, COERCE_SUBJECT

pytestmark = pytest.mark.network  # the two sdists come from the index (cached after the first run)

UTILS = "vllm/tool_parsers/utils.py"


def _example(tmp_path):
    dist = tmp_path / "dist"
    shutil.copytree(EXAMPLE, dist, ignore=shutil.ignore_patterns("receipts"))
    return dist


def _git(repo, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, input=stdin
    ).stdout.strip()


def _rooted(tmp_path: Path, patch: str = "") -> Path:
    """A distribution whose patches are written against vllm/ (`[series] root`), with one patch of its own."""
    dist = tmp_path / "rooted"
    (dist / "patches").mkdir(parents=True)
    (dist / "patches" / "0001-own.patch").write_text(patch or _own_patch(), encoding="utf-8")
    (dist / "patches" / "series").write_text("0001-own.patch\n", encoding="utf-8")
    (dist / "forklift.toml").write_text(
        f'[engine]\nkind = "vllm"\n{VLLM_032_UPSTREAM}[series]\ndir = "patches"\nroot = "vllm"\npatches_md = ""\n',
        encoding="utf-8",
    )
    return dist


def _own_patch() -> str:
    """Two comment lines at the top of tool_parsers/utils.py (written against the vllm/ root)."""
    return (
        "Description: a note of our own at the top of the tool parsers' helpers\n---\n"
        "--- a/tool_parsers/utils.py\n+++ b/tool_parsers/utils.py\n@@ -1,3 +1,5 @@\n"
        "+# carried by this distribution\n+# (a note of its own)\n"
        " # SPDX-License-Identifier: Apache-2.0\n"
        " # SPDX-FileCopyrightText: Copyright contributors to the vLLM project\n \n"
    )


def test_pick_carries_the_commit_as_a_dep3_patch_that_checks(tmp_path, upstream_git):
    dist = _example(tmp_path)
    proc = forklift("-c", dist, "pick", upstream_git.coerce[:12], "--repo", upstream_git.repo)
    assert proc.returncode == 0, proc.stderr
    name = "0004-tool-parser-keep-a-large-integer-exact-when-coercing.patch"
    assert (dist / "patches" / "series").read_text().splitlines()[-1] == name
    text = (dist / "patches" / name).read_text()
    header, _, diff = text.partition("---\n")
    assert header.splitlines()[0] == f"Description: {COERCE_SUBJECT}"
    assert f"Origin: upstream, commit:{upstream_git.coerce}\n" in header
    assert f"Applied-Upstream: 0.33.0, commit:{upstream_git.coerce}\n" in header
    assert "Author: Upstream Dev <dev@upstream.invalid>\n" in header
    # the change is the commit's: git apply of the patch on its parent gives the commit's tree
    index = {**os.environ, "GIT_INDEX_FILE": str(tmp_path / "index")}
    run = functools.partial(subprocess.run, check=True, capture_output=True, text=True, env=index)
    run(["git", "-C", str(upstream_git.repo), "read-tree", f"{upstream_git.coerce}^"])
    run(["git", "-C", str(upstream_git.repo), "apply", "--cached", "-"], input=diff)
    tree = run(["git", "-C", str(upstream_git.repo), "write-tree"]).stdout.strip()
    assert tree == _git(upstream_git.repo, "rev-parse", f"{upstream_git.coerce}^{{tree}}")
    assert name in (dist / "PATCHES.md").read_text()
    assert load_series(dist / "patches").patches[-1].paths == COERCE_FILES[::-1]
    check = forklift("-c", dist, "check", "--receipts", tmp_path / "r")
    assert check.returncode == 0, check.stdout + check.stderr


def test_pick_keeps_to_the_series_root_and_says_backport(tmp_path, upstream_git):
    dist = _rooted(tmp_path)
    proc = forklift("-c", dist, "pick", upstream_git.coerce, "--repo", upstream_git.repo)
    assert proc.returncode == 0, proc.stderr
    assert "dropped tests/tool_parsers/test_utils.py: outside the pinned tree or the [series] root" in proc.stdout
    assert "applies at an offset: re-cut at the lines it lands on" in proc.stdout  # below our two lines
    series = load_series(dist / "patches", root="vllm")
    picked = series.patches[-1]
    assert picked.paths == (UTILS,)
    assert "--- a/tool_parsers/utils.py\n" in picked.text and "@@ -1200,6 +1200,10 @@" in picked.text
    assert f"Origin: backport, commit:{upstream_git.coerce}" in picked.text
    check = forklift("-c", dist, "check", "--receipts", tmp_path / "r")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "offset" not in check.stdout  # re-cut: every hunk lands where it says


def test_pick_bad_input_is_one_line(tmp_path, upstream_git):
    dist = _rooted(tmp_path)
    repo = upstream_git.repo
    coerce, startup, v032 = upstream_git.coerce, upstream_git.startup, upstream_git.v032
    merge = _git(repo, "commit-tree", f"{coerce}^{{tree}}", "-p", v032, "-p", startup, "-m", "Merge a branch")
    index = tmp_path / "index"  # a commit that touches only tests/, outside the vllm/ root
    env_git = ["env", f"GIT_INDEX_FILE={index}", "git", "-C", str(repo)]
    subprocess.run([*env_git, "read-tree", v032], check=True)
    blob = _git(repo, "rev-parse", f"{coerce}:{COERCE_FILES[1]}")
    subprocess.run([*env_git, "update-index", "--cacheinfo", f"100644,{blob},{COERCE_FILES[1]}"], check=True)
    tree = subprocess.run([*env_git, "write-tree"], check=True, capture_output=True, text=True).stdout.strip()
    tests_only = _git(repo, "commit-tree", tree, "-p", v032, "-m", "Test only")
    cases = {
        ("nope", repo): (1, f"error: {repo}: revision 'nope' does not exist"),
        (coerce, tmp_path): (2, f"error: --repo {tmp_path}: not a git repository (a local clone of upstream)"),
        (coerce, tmp_path / "gone"): (2, f"error: --repo {tmp_path / 'gone'}: no such folder"),
        (merge, repo): (1, f"error: commit {merge[:12]} (Merge a branch) is a merge commit: pick the commits"),
        (v032, repo): (1, f"error: commit {v032[:12]} (vLLM 0.32.0) is a root commit"),
        (tests_only, repo): (
            1,
            f"error: commit {tests_only[:12]} (Test only) changes nothing in the [series] root vllm/: "
            f"it touches {COERCE_FILES[1]}",
        ),
    }
    for (rev, where), (code, expected) in cases.items():
        proc = forklift("-c", dist, "pick", rev, "--repo", where)
        assert proc.returncode == code and proc.stderr.startswith(expected), (rev, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert (dist / "patches" / "series").read_text() == "0001-own.patch\n"  # nothing written
    assert forklift("-c", dist, "pick", coerce, "--repo", repo).returncode == 0
    again = forklift("-c", dist, "pick", coerce, "--repo", repo)
    assert again.returncode == 1
    assert again.stderr.strip().endswith(
        "is already in the series as 0002-tool-parser-keep-a-large-integer-exact-when-coercing.patch"
    )


def test_pick_that_conflicts_with_the_series_writes_nothing(tmp_path, upstream_git):
    """A patch of ours rewrote the lines the commit's hunk needs: the pick is refused, naming the hunk."""
    conflicting = (
        "Description: ours\n---\n--- a/tool_parsers/utils.py\n+++ b/tool_parsers/utils.py\n"
        '@@ -1198,7 +1198,7 @@\n                 continue\n         if candidate_type == "number":\n'
        "             try:\n-                val = float(value)\n+                val = float(value.strip())\n"
        "             except (ValueError, TypeError):\n                 continue\n"
        "             if not math.isfinite(val):\n"
    )
    dist = _rooted(tmp_path, conflicting)
    before = (dist / "patches" / "series").read_text()
    proc = forklift("-c", dist, "pick", upstream_git.coerce, "--repo", upstream_git.repo)
    assert proc.returncode == 1
    assert "does not apply on the pin and the series: fails" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert (dist / "patches" / "series").read_text() == before
    assert sorted(p.name for p in (dist / "patches").iterdir()) == ["0001-own.patch", "series"]


def test_the_origin_url_names_the_commit_page_and_never_a_token(tmp_path):
    """A clone whose origin carries a token: the header gets github.com/OWNER/NAME/commit/SHA, no credentials;
    any other remote gets commit:SHA."""
    from forklift.fork.pick import commit_place
    from forklift.fork.repo import Git
    from tests.series.distro import commit_all

    repo = tmp_path / "clone"
    commit = commit_all(repo, {"f.py": "x = 1\n"}, "one")
    _git(repo, "remote", "add", "origin", "https://someone:ghp_SECRET@github.com/vllm-project/vllm.git")
    assert commit_place(Git(repo), commit) == f"https://github.com/vllm-project/vllm/commit/{commit}"
    _git(repo, "remote", "set-url", "origin", "https://git.example.com/vllm.git")
    assert commit_place(Git(repo), commit) == f"commit:{commit}"


def test_hostile_commits_are_one_line_and_write_nothing(tmp_path):
    """A clone of a small path-pinned upstream whose commits change a binary file, or add a file whose name
    holds a newline: each pick is refused in one line; the series is untouched."""
    from tests.series.distro import MOD, commit_all, distribution, edit

    dist = distribution(tmp_path, {"pkg/mod.py": MOD}, {"a.patch": edit("pkg/mod.py", 5, "v5 = 50")})
    clone = tmp_path / "clone"
    commit_all(clone, {"pkg/mod.py": MOD}, "v1", tag="v1")
    binary = commit_all(clone, {"pkg/blob.bin": b"\0\1\2"}, "Add a blob")
    newline = commit_all(clone, {"pkg/a\nb.py": "x = 1\n"}, "A name with a newline")
    series = (dist / "patches" / "series").read_text()
    expected = {
        binary: f"error: commit {binary[:12]} changes the binary file pkg/blob.bin: a series holds text diffs only",
        newline: f"error: commit {newline[:12]} changes 'pkg/a\\nb.py', a file name with a line break: no patch can",
    }
    for commit, line in expected.items():
        proc = forklift("-c", dist, "pick", commit, "--repo", clone)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith(line), proc.stderr
    assert (dist / "patches" / "series").read_text() == series
    assert sorted(p.name for p in (dist / "patches").iterdir()) == ["a.patch", "series"]
    picked = commit_all(clone, {"pkg/mod.py": MOD.replace("v20 = 20\n", "v20 = 'twenty'\n")}, "Fix: v20 `as` text\t!")
    proc = forklift("-c", dist, "pick", picked, "--repo", clone)
    assert proc.returncode == 0, proc.stderr
    assert (dist / "patches" / "series").read_text().splitlines()[-1] == "0001-fix-v20-as-text.patch"


def test_the_first_patch_of_a_new_series_can_be_a_pick(tmp_path):
    from tests.series.distro import MOD, commit_all, distribution

    (tmp_path / "dist" / "patches").mkdir(parents=True)
    dist = distribution(tmp_path, {"pkg/mod.py": MOD}, {}, series="# no patch yet\n")
    clone = tmp_path / "clone"
    commit_all(clone, {"pkg/mod.py": MOD}, "v1", tag="v1")
    fix = commit_all(clone, {"pkg/mod.py": MOD.replace("v7 = 7\n", "v7 = 'seven'\n")}, "Spell v7")
    proc = forklift("-c", dist, "pick", fix, "--repo", clone)
    assert proc.returncode == 0, proc.stderr
    assert (dist / "patches" / "series").read_text() == "# no patch yet\n0001-spell-v7.patch\n"
    assert forklift("-c", dist, "check", "--receipts", tmp_path / "r").returncode == 0
