"""Throwaway git forks for the fork and flip tests: a repository whose base commit is a pristine tree.

Commits are made with git plumbing on a private index, so the repository needs
no checked-out copy of the 7,700-file vLLM tree (the tree is added once, from
the cache, as the base commit).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from forklift.fork.create import create_fork
from forklift.fork.repo import Git

AUTHOR = ("Ann Maintainer", "ann@example.org")
_DATE = "2026-11-01T12:00:00+0000"


def _identity(name: str, email: str) -> dict[str, str]:
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_AUTHOR_DATE": _DATE,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
        "GIT_COMMITTER_DATE": _DATE,
    }


def init_fork(tree: Path, repo: Path, tag: str) -> tuple[Git, str]:
    """A bare fork whose base commit holds `tree` (tagged `tag`): no 7,700-file checkout to pay for."""
    return create_fork(tree, repo, tag, f"pristine {tree.name}", bare=True)


def commit(
    git: Git, parent: str | list[str], changes: dict[str, bytes | None], message: str, author: tuple[str, str] = AUTHOR
) -> str:
    """A commit on `parent` (or a merge of several parents) writing `changes` (None deletes)."""
    parents = [parent] if isinstance(parent, str) else parent
    with tempfile.TemporaryDirectory() as scratch:
        env = {"GIT_INDEX_FILE": os.path.join(scratch, "index"), **_identity(*author)}
        git.run("read-tree", parents[0], env=env)
        for path, content in changes.items():
            if content is None:
                git.run("update-index", "--index-info", input=f"0 {'0' * 40}\t{path}\n".encode(), env=env)
                continue
            blob = git.text("hash-object", "-w", "--stdin", input=content).strip()
            listed = git.text("ls-tree", parents[0], "--", path).split()
            mode = listed[0] if listed else "100644"  # keep an executable file executable
            git.run("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", env=env)
        tree_id = git.text("write-tree", env=env).strip()
        args = [a for p in parents for a in ("-p", p)]
        return git.text("commit-tree", tree_id, *args, "-F", "-", input=message.encode(), env=env).strip()


def branch(git: Git, name: str, commit_id: str) -> None:
    git.run("update-ref", f"refs/heads/{name}", commit_id)


def edit(root: Path, path: str, old: str, new: str) -> bytes:
    """The file at `path` under `root` with the one occurrence of `old` replaced by `new`."""
    text = (root / path).read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path}: expected exactly one {old!r}"
    return text.replace(old, new).encode()


@dataclass(frozen=True)
class Fork:
    git: Git
    base: str
    tag: str
