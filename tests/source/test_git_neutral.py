"""The one git runner: a hostile ~/.gitconfig cannot change a pristine tree, run a hook or shadow a command."""

from __future__ import annotations

import hashlib

import pytest

from forklift.config.schema import GitPin
from forklift.errors import ForkliftError
from forklift.git import run_git, temporary_index
from forklift.source.materialize import materialize
from tests.cli import forklift
from tests.source.helpers import git


@pytest.fixture
def upstream(tmp_path):
    repo = tmp_path / "upstream"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "text.py").write_bytes(b"line one\nline two\n")
    (repo / "data.txt").write_bytes(b"a\nb\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    git(repo, "tag", "v1")
    return repo


@pytest.fixture
def hostile_home(tmp_path, monkeypatch):
    """A ~/.gitconfig set to change bytes (autocrlf), run code (a hook, an alias) and page output."""
    home = tmp_path / "home"
    hooks = home / "hooks"
    hooks.mkdir(parents=True)
    marker = tmp_path / "hook-ran"
    for name in ("reference-transaction", "post-checkout", "post-commit"):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        hook.chmod(0o755)
    (home / ".gitconfig").write_text(
        "[core]\n\tautocrlf = true\n\teol = crlf\n"
        f"\thooksPath = {hooks}\n\tpager = false\n"
        "[alias]\n\tls-remote = !touch {marker}-alias\n\tread-tree = !false\n"
        f"[init]\n\ttemplateDir = {home / 'templates'}\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return marker


def _digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.is_file()}


def test_hostile_gitconfig_leaves_the_pristine_tree_byte_identical(upstream, hostile_home, cache, tmp_path):
    commit = git(upstream, "rev-parse", "v1")
    tree = materialize(GitPin(source="git", url=str(upstream), tag="v1", commit=commit), tmp_path, cache)
    assert (tree.path / "text.py").read_bytes() == b"line one\nline two\n"  # no CRLF from autocrlf
    assert _digests(tree.path) == _digests(upstream)
    assert not hostile_home.exists(), "a hook from ~/.gitconfig ran"
    assert not hostile_home.with_name("hook-ran-alias").exists()


def test_runner_ignores_hooks_when_writing_refs(upstream, hostile_home):
    commit = git(upstream, "rev-parse", "v1")
    run_git(["update-ref", "refs/heads/other", commit], cwd=upstream)
    with temporary_index() as env:
        run_git(["read-tree", commit], cwd=upstream, env=env)  # the alias `read-tree = !false` is not taken
        index = env["GIT_INDEX_FILE"]
    assert not hostile_home.exists()
    assert not __import__("os").path.exists(index)  # the throwaway index is gone


def test_git_failure_is_one_line_naming_the_command(tmp_path):
    with pytest.raises(ForkliftError, match=r"^somewhere: git rev-parse failed: fatal: .*") as err:
        run_git(["rev-parse", "HEAD"], cwd=tmp_path, what="somewhere")
    assert "\n" not in str(err.value)


def test_missing_git_is_one_line_not_a_traceback(upstream, tmp_path):
    commit = git(upstream, "rev-parse", "v1")
    dist = tmp_path / "dist"
    dist.mkdir()
    (dist / "forklift.toml").write_text(
        f'[upstream]\nsource = "git"\nurl = "{upstream}"\ntag = "v1"\ncommit = "{commit}"\n'
    )
    empty = tmp_path / "empty-path"
    empty.mkdir()
    done = forklift("fetch", cwd=dist, env={"PATH": str(empty), "FORKLIFT_CACHE": str(tmp_path / "c")})
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "error: git is not installed or not on PATH (forklift needs it for git pins and forks)"
    ]
