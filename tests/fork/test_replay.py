"""Replay identity and the SOURCE binding on a throwaway fork of the real vLLM 0.32.0 tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from forklift.fork.binding import SOURCE_FILE, SourceBinding, parse_binding
from forklift.fork.export import export_fork
from forklift.fork.replay import replay_series
from forklift.fork.repo import Git
from forklift.fork.upstream import UpstreamPaths
from forklift.series.model import parse_patch
from tests.cli import forklift
from tests.fork.fixtures import LOGGER
from tests.fork.gitfork import branch, commit, edit

pytestmark = pytest.mark.network


@pytest.fixture
def exported(vllm_fork, distribution) -> Path:
    proc = forklift(
        "-c",
        str(distribution),
        "export",
        "--from",
        "patched",
        "--repo",
        str(vllm_fork.git.repo),
        "--base",
        vllm_fork.base,
    )
    assert proc.returncode == 0, proc.stderr
    return distribution


@pytest.fixture
def fork_clone(vllm_fork, tmp_path) -> Git:
    """A clone sharing the session fork's objects, free to move tags and remote branches."""
    clone = tmp_path / "clone.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--shared", str(vllm_fork.git.repo), str(clone)], check=True)
    git = Git(clone)
    git.run("update-ref", "refs/remotes/origin/release", vllm_fork.patched)
    return git


def replay(dist: Path, repo: Path, ref: str):
    return forklift("-c", str(dist), "replay", "--against", ref, "--repo", str(repo))


def test_replay_of_the_exported_series_is_identical(exported, vllm_fork):
    proc = replay(exported, vllm_fork.git.repo, "patched")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 differing files of" in proc.stdout


def test_replay_sets_apart_files_a_git_fork_never_had(vllm_fork, vllm_032_tree):
    """A fork of upstream's repository lacks what the sdist build generates (vllm/_version.py)."""
    git = vllm_fork.git
    github_like = commit(
        git,
        vllm_fork.base,
        {"vllm/_version.py": None, "vllm.egg-info/PKG-INFO": None},
        "upstream's repository at v0.32.0: no generated files\n",
    )
    changed = git.text("diff", "--name-only", vllm_fork.base, vllm_fork.patched).split()
    contents = git.blobs([f"{vllm_fork.patched}:{p}" for p in changed])
    tip = commit(git, github_like, dict(zip(changed, contents, strict=True)), "the fork's work\n")
    series = load_series_from(git, vllm_fork)
    result = replay_series(git, tip, vllm_032_tree.path, series, "gnu-patch", base=github_like)
    assert result.identical
    assert result.not_in_base == ("vllm.egg-info/PKG-INFO", "vllm/_version.py")
    without_base = replay_series(git, tip, vllm_032_tree.path, series, "gnu-patch")
    assert [str(d) for d in without_base.differences] == [
        "vllm.egg-info/PKG-INFO: missing from the fork",
        "vllm/_version.py: missing from the fork",
    ]


def load_series_from(git: Git, fork) -> list:
    """The `patched` branch exported in memory, parsed as the series engine reads it."""
    upstream = UpstreamPaths.from_files(set(git.tree_blobs(fork.base)))
    return [
        parse_patch(p.name, p.text)
        for p in export_fork(git, fork.base, fork.patched, upstream, applier="gnu-patch").patches
    ]


def test_replay_lists_what_the_series_lacks_and_ignores_fork_only_files(exported, vllm_fork, vllm_032_tree):
    extra = commit(
        vllm_fork.git,
        vllm_fork.patched,
        {
            LOGGER: edit(vllm_032_tree.path, LOGGER, "_DATE_FORMAT = ", "_DATE_FORMAT: str = "),
            "vllm/fork_only_helper.py": b"HELPER = 1\n",
            ".forgejo/workflows/ci.yml": b"on: push\n",
        },
        "Work committed to the fork but never exported\n",
    )
    proc = replay(exported, vllm_fork.git.repo, extra)
    assert proc.returncode == 1
    assert f"{LOGGER}: content differs" in proc.stdout
    assert "vllm/fork_only_helper.py: only in the fork" in proc.stdout
    assert ".forgejo" not in proc.stdout  # outside upstream's tree: not part of the comparison
    assert "2 differing files of" in proc.stdout


def test_replay_names_a_file_the_fork_deleted(exported, vllm_fork):
    gone = commit(vllm_fork.git, vllm_fork.patched, {LOGGER: None}, "Drop the logger by accident\n")
    proc = replay(exported, vllm_fork.git.repo, gone)
    assert proc.returncode == 1
    assert f"{LOGGER}: missing from the fork" in proc.stdout


def bind(dist: Path, git: Git, commit_id: str, *extra: str):
    return forklift(
        "-c", str(dist), "source", "bind", commit_id, "--branch", "origin/release", "--repo", str(git.repo), *extra
    )


def verify(dist: Path, git: Git):
    return forklift("-c", str(dist), "source", "verify", "--repo", str(git.repo))


def test_source_bind_and_verify(exported, vllm_fork, fork_clone):
    proc = bind(exported, fork_clone, "patched", "--tag", "v0.32.0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    binding = parse_binding((exported / SOURCE_FILE).read_text(), "SOURCE")
    assert binding == SourceBinding(commit=vllm_fork.patched, branch="origin/release", tag="v0.32.0")
    proc = verify(exported, fork_clone)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OK" in proc.stdout
    proc = forklift("-c", str(exported), "replay", "--repo", str(fork_clone.repo))  # defaults to SOURCE's commit
    assert proc.returncode == 0 and "0 differing files" in proc.stdout


def test_fork_commit_not_reachable_from_the_published_branch(exported, vllm_fork, fork_clone):
    fork_clone.run("update-ref", "refs/remotes/origin/release", vllm_fork.commits[1])
    proc = bind(exported, fork_clone, vllm_fork.patched)
    assert proc.returncode == 1
    assert (
        f"unpublished: fork commit {vllm_fork.patched[:12]} is not reachable from the published branch "
        "origin/release" in proc.stdout
    )
    assert not (exported / SOURCE_FILE).exists()


def test_tag_that_moved(exported, vllm_fork, fork_clone):
    assert bind(exported, fork_clone, vllm_fork.patched, "--tag", "v0.32.0").returncode == 0
    fork_clone.run("tag", "-f", "v0.32.0", vllm_fork.commits[0])
    proc = verify(exported, fork_clone)
    assert proc.returncode == 1
    assert (
        f"moved-tag: tag v0.32.0 now names {vllm_fork.commits[0][:12]}, but the pinned base is "
        f"{vllm_fork.base[:12]}" in proc.stdout
    )
    assert "unpublished" not in proc.stdout and "went-backwards" not in proc.stdout


def test_source_commit_that_went_backwards(exported, vllm_fork, fork_clone):
    dist = Git(exported)
    subprocess.run(["git", "init", "-q", str(exported)], check=True)
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.org"]
    assert bind(exported, fork_clone, vllm_fork.patched).returncode == 0
    dist.run(*identity, "add", SOURCE_FILE)
    dist.run(*identity, "commit", "-q", "-m", "bind the release")
    older = vllm_fork.commits[1]
    proc = bind(exported, fork_clone, older)  # bind refuses to move back from the recorded commit
    assert proc.returncode == 1
    assert (
        f"went-backwards: fork commit {older[:12]} does not descend from the previously recorded "
        f"{vllm_fork.patched[:12]}" in proc.stdout
    )
    (exported / SOURCE_FILE).write_text(SourceBinding(older, "origin/release").render())  # edited by hand
    dist.run(*identity, "commit", "-q", "-am", "rewind the release")
    proc = verify(exported, fork_clone)  # verify finds the earlier record in the distribution's history
    assert proc.returncode == 1
    assert "went-backwards" in proc.stdout


def test_missing_commit_and_commit_not_from_the_base(exported, vllm_fork, fork_clone):
    (exported / SOURCE_FILE).write_text(SourceBinding("0" * 40, "origin/release").render())
    proc = verify(exported, fork_clone)
    assert proc.returncode == 1
    assert f"missing-commit: fork commit {'0' * 12} does not exist" in proc.stdout
    orphan_tree = fork_clone.text("rev-parse", f"{vllm_fork.base}^{{tree}}").strip()
    orphan = fork_clone.text(
        "commit-tree",
        orphan_tree,
        "-m",
        "unrelated history",
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        },
    ).strip()
    branch(fork_clone, "orphan", orphan)
    fork_clone.run("update-ref", "refs/remotes/origin/release", orphan)
    (exported / SOURCE_FILE).write_text(SourceBinding(orphan, "origin/release").render())
    proc = verify(exported, fork_clone)
    assert proc.returncode == 1
    assert f"not-from-base: fork commit {orphan[:12]} does not descend from the pinned base" in proc.stdout


def test_malformed_source_file(exported, fork_clone):
    (exported / SOURCE_FILE).write_text('commit = "abc"\nbranch = "origin/release"\n')
    proc = verify(exported, fork_clone)
    assert proc.returncode == 1
    assert "SOURCE: commit: expected a full 40-hex commit id, got 'abc'" in proc.stderr
