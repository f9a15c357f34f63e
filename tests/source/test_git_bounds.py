"""A git pin's tree is listed and bounded before one file is checked out: git stores a subtree once however often
a tree names it, so a repository of a few KiB can hold hundreds of thousands of files (or a path a thousand
folders deep, which a recursive walk cannot follow). Each is one line, and nothing is left in the cache."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from forklift.config.schema import GitPin
from forklift.errors import ForkliftError
from forklift.source.limits import MAX_DEPTH
from forklift.source.materialize import materialize
from tests.source.helpers import cache_entries, git


def mktree(repo: Path, entries: list[tuple[str, str, str]]) -> str:
    """A tree object of (mode, object id, name) entries, written with git's own plumbing."""
    text = "".join(f"{mode} {'tree' if mode == '040000' else 'blob'} {oid}\t{name}\n" for mode, oid, name in entries)
    return subprocess.run(
        ["git", "-C", str(repo), "mktree"], input=text, capture_output=True, text=True, check=True
    ).stdout.strip()


def tagged(repo: Path, tree: str) -> GitPin:
    commit = git(repo, "commit-tree", tree, "-m", "hostile")
    git(repo, "tag", "v1", commit)
    return GitPin(source="git", url=str(repo), tag="v1", commit=commit)


@pytest.fixture
def repo(tmp_path) -> tuple[Path, str]:
    repo = tmp_path / "upstream"
    repo.mkdir()
    git(repo, "init", "-q")
    blob = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-w", "--stdin"], input=b"x" * 200_000, capture_output=True, check=True
    )
    return repo, blob.stdout.decode().strip()


def test_a_tree_naming_one_subtree_over_and_over_is_refused(repo, cache, tmp_path, monkeypatch):
    path, blob = repo
    tree = mktree(path, [("100644", blob, f"f{i}") for i in range(8)])
    for _ in range(4):  # 8^5 = 32,768 files from six small objects
        tree = mktree(path, [("040000", tree, f"d{i}") for i in range(8)])
    monkeypatch.setenv("FORKLIFT_EXTRACT_MAX_MEMBERS", "10000")
    monkeypatch.setenv("FORKLIFT_EXTRACT_MAX_BYTES", str(1 << 40))
    pin = tagged(path, tree)
    with pytest.raises(ForkliftError, match=r"^unsafe git tree .* v1 @ \w+: more than 10,000 files$"):
        materialize(pin, tmp_path, cache)
    assert not any(name.startswith("git-") for name in cache_entries(cache).get("trees", []))


def test_a_tree_whose_files_hold_too_many_bytes_is_refused(repo, cache, tmp_path, monkeypatch):
    path, blob = repo
    monkeypatch.setenv("FORKLIFT_EXTRACT_MAX_BYTES", "1000000")
    pin = tagged(path, mktree(path, [("100644", blob, f"f{i}") for i in range(6)]))
    with pytest.raises(ForkliftError, match=r"^unsafe git tree .*: its files hold more than 1,000,000 bytes$"):
        materialize(pin, tmp_path, cache)


def test_a_deep_tree_is_one_line_not_a_recursion_error(repo, cache, tmp_path):
    path, blob = repo
    tree = mktree(path, [("100644", blob, "f")])
    for _ in range(1100):  # 2,200 bytes of path: within PATH_MAX, past Python's recursion limit
        tree = mktree(path, [("040000", tree, "a")])
    with pytest.raises(ForkliftError, match=rf"^unsafe git tree .*: a path more than {MAX_DEPTH} folders deep$"):
        materialize(tagged(path, tree), tmp_path, cache)
