"""Start a fork repository from a pristine tree, for a pin that has no git history of its own (PyPI, path).

The pristine tree becomes the base commit on `main`, tagged as upstream tags its
releases (v0.32.0), so export, import and replay find the base without being told.
The tree is added straight from the cache through a private index: nothing is
copied before git stores it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from forklift.errors import ForkliftError
from forklift.fork.repo import Git

_IDENTITY = {
    "GIT_AUTHOR_NAME": "forklift",
    "GIT_AUTHOR_EMAIL": "forklift@localhost",
    "GIT_COMMITTER_NAME": "forklift",
    "GIT_COMMITTER_EMAIL": "forklift@localhost",
    "GIT_AUTHOR_DATE": "1970-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "1970-01-01T00:00:00+0000",
}


def create_fork(tree: Path, repo: Path, tag: str, label: str, bare: bool = False) -> tuple[Git, str]:
    """A new repository whose `main` is one commit holding `tree`, tagged `tag`; returns (git, base)."""
    repo = repo.resolve()  # GIT_DIR below must not be read relative to `git -C`
    if repo.exists() and any(repo.iterdir()):
        raise ForkliftError(f"{repo}: exists and is not empty: forklift only starts a fork in a new folder")
    repo.mkdir(parents=True, exist_ok=True)
    git = Git(repo)
    git.run("init", "-q", *(["--bare"] if bare else []), "-b", "main")
    base = release_commit(git, tree, tag, label)
    git.run("update-ref", "refs/heads/main", base)
    return git, base


def release_commit(git: Git, tree: Path, tag: str, label: str, parent: str | None = None) -> str:
    """The commit holding the pristine `tree`, tagged `tag` (the one already tagged so, when it holds the
    same tree); a new release's commit is a child of the previous release's, so history reads in order."""
    git_dir = git.text("rev-parse", "--absolute-git-dir").strip()
    with tempfile.TemporaryDirectory(prefix="forklift-fork-") as scratch:
        env = {
            "GIT_INDEX_FILE": os.path.join(scratch, "index"),
            "GIT_DIR": git_dir,
            "GIT_WORK_TREE": str(tree),
            **_IDENTITY,
        }
        git.run("add", "-A", "-f", ".", env=env)  # -f: an sdist ships files upstream's .gitignore names
        tree_id = git.text("write-tree", env=env).strip()
        tagged = git.resolve(f"refs/tags/{tag}")
        if tagged is not None:
            if git.text("rev-parse", f"{tagged}^{{tree}}").strip() != tree_id:
                raise ForkliftError(f"{git.repo}: tag {tag} names {tagged[:12]}, which does not hold {label}")
            return tagged
        parents = ["-p", parent] if parent else []
        commit = git.text("commit-tree", tree_id, *parents, "-m", f"{label} (pristine)", env=env).strip()
    git.run("tag", tag, commit)
    return commit
