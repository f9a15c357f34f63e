"""flip names the upstream commit that carries each retired patch (`git patch-id --stable` over the range between
the pins): on the real upstream repository of tests/fixtures/upstream_git.py (--upstream-repo, a PyPI pin), and on
a git pin's own repository."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.cli import EXAMPLE, forklift
from tests.fixtures.upstream_git import COERCE_SUBJECT, STARTUP_SUBJECT
from tests.fork.test_pick import _rooted
from tests.series.distro import MOD, commit_all, edit

PICKED = "0004-tool-parser-keep-a-large-integer-exact-when-coercing.patch"


@pytest.mark.network
def test_retired_patches_name_their_upstream_commits(tmp_path, upstream_git):
    """One patch `pick` wrote (forklift's diff writer), one `git format-patch` wrote (git's): both retire on
    0.33.0 and each names its commit; without --upstream-repo nothing is traced."""
    dist = tmp_path / "dist"
    shutil.copytree(EXAMPLE, dist, ignore=shutil.ignore_patterns("receipts"))
    assert forklift("-c", dist, "pick", upstream_git.coerce, "--repo", upstream_git.repo).returncode == 0
    mailed = subprocess.run(
        ["git", "-C", str(upstream_git.repo), "format-patch", "-1", "--stdout", upstream_git.startup],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (dist / "patches" / "0005-startup.patch").write_text(mailed, encoding="utf-8")
    with (dist / "patches" / "series").open("a") as series:
        series.write("0005-startup.patch\n")
    report_md = tmp_path / "flip.md"
    proc = forklift(
        "-c", dist, "flip", "0.33.0", "--upstream-repo", upstream_git.repo, "--json", "--report", report_md,
        "--receipts", tmp_path / "r",
    )  # fmt: skip
    report = json.loads(proc.stdout)
    rows = {p["name"]: p for p in report["patches"]}
    assert rows[PICKED]["verdict"] == "already-upstream"
    assert rows[PICKED]["carried_by"] == f"{upstream_git.coerce[:12]} {COERCE_SUBJECT}"
    assert rows["0005-startup.patch"]["verdict"] == "already-upstream"
    assert rows["0005-startup.patch"]["carried_by"] == f"{upstream_git.startup[:12]} {STARTUP_SUBJECT}"
    assert report["upstream_range"] == f"{upstream_git.v032[:12]}..{upstream_git.v033[:12]}"
    assert f"upstream commit {upstream_git.coerce[:12]} {COERCE_SUBJECT}" in report_md.read_text()
    plain = forklift("-c", dist, "flip", "0.33.0", "--json", "--receipts", tmp_path / "r")
    assert json.loads(plain.stdout)["patches"][3]["carried_by"] is None


@pytest.mark.network
def test_a_patch_limited_to_the_series_root_is_traced_within_it(tmp_path, upstream_git):
    """The pick left tests/ out (root vllm): the commit's change to the patch's own files is the patch."""
    dist = _rooted(tmp_path)
    assert forklift("-c", dist, "pick", upstream_git.coerce, "--repo", upstream_git.repo).returncode == 0
    proc = forklift(
        "-c", dist, "flip", "0.33.0", "--upstream-repo", upstream_git.repo, "--json", "--receipts", tmp_path / "r"
    )
    rows = {p["name"]: p for p in json.loads(proc.stdout)["patches"]}
    assert rows[PICKED.replace("0004", "0002")]["carried_by"] == f"{upstream_git.coerce[:12]} {COERCE_SUBJECT}"


def _git_distribution(tmp_path):
    """Pinned to tag v1 of a local repository; v2 carries a.patch's change in its own commit, b.patch's not."""
    repo = tmp_path / "upstream"
    first = commit_all(repo, {"pkg/mod.py": MOD}, "v1", tag="v1")
    fix = commit_all(repo, {"pkg/mod.py": MOD.replace("v5 = 5\n", "v5 = 50\n")}, "Fix v5")
    commit_all(repo, {"pkg/mod.py": MOD.replace("v5 = 5\n", "v5 = 50\n"), "pkg/new.py": "x = 1\n"}, "v2", tag="v2")
    dist = tmp_path / "dist"
    (dist / "patches").mkdir(parents=True)
    (dist / "patches" / "a.patch").write_text(edit("pkg/mod.py", 5, "v5 = 50"))
    (dist / "patches" / "b.patch").write_text(edit("pkg/mod.py", 20, "x"))
    (dist / "patches" / "series").write_text("a.patch\nb.patch\n")
    (dist / "forklift.toml").write_text(
        f'[engine]\nkind = "generic"\n[upstream]\nsource = "git"\nurl = "{repo}"\ntag = "v1"\ncommit = "{first}"\n'
        '[series]\npatches_md = ""\n'
    )
    return dist, fix


def test_a_git_pin_traces_in_its_own_repository(tmp_path):
    dist, fix = _git_distribution(tmp_path)
    proc = forklift("-c", dist, "flip", "v2", "--json", "--receipts", tmp_path / "r")
    rows = {p["name"]: p for p in json.loads(proc.stdout)["patches"]}
    assert rows["a.patch"]["verdict"] == "already-upstream"
    assert rows["a.patch"]["carried_by"] == f"{fix[:12]} Fix v5"
    assert rows["b.patch"]["carried_by"] is None  # it applies: not retired, not traced
    table = forklift("-c", dist, "flip", "v2", "--receipts", tmp_path / "r")
    assert f"upstream commit {fix[:12]} Fix v5" in table.stdout
    wrote = forklift("-c", dist, "flip", "v2", "--write", "--receipts", tmp_path / "r")
    assert wrote.returncode == 0, wrote.stderr
    retired = (dist / "patches" / "series").read_text().splitlines()[0]  # the retired line names the commit too
    assert retired.startswith("# retired: a.patch (already upstream in ")
    assert retired.endswith(f": commit {fix[:12]} Fix v5)")


def test_an_upstream_repo_without_the_release_tags_is_one_line(tmp_path):
    dist, _ = _git_distribution(tmp_path)
    bare = tmp_path / "untagged"
    commit_all(bare, {"f": "x\n"}, "only")
    for where, expected in [
        (tmp_path / "nothing", f"error: --upstream-repo {tmp_path / 'nothing'}: no such folder"),
        (dist, f"error: --upstream-repo {dist}: not a git repository"),
    ]:
        proc = forklift("-c", dist, "flip", "v2", "--upstream-repo", where, "--receipts", tmp_path / "r")
        assert proc.returncode == 2 and proc.stderr.startswith(expected), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    proc = forklift("-c", dist, "flip", "v2", "--upstream-repo", bare, "--receipts", tmp_path / "r")
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "does not exist" in proc.stderr and "the pinned commit of v1" in proc.stderr
