"""Import a series into a fork repository: a branch at the pinned base with one commit per patch.

The commits are built with git plumbing on a private index (`git apply --cached`,
`write-tree`, `commit-tree`), so the user's working tree is never read; only the
branch ref is written, and only once every patch has applied. A branch that is
checked out (`--force` over the one in use) moves with its index and files
(`git reset --keep`), so no staged change turns the new tree back into the old;
it is refused while it holds uncommitted changes. For a PyPI or path pin,
importing into a folder that is new (or empty) starts the fork there instead: the
pristine tree as the tagged base commit on main, the new branch checked out on top
of it; a failure or Ctrl-C there removes what was made.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from forklift.config import Config
from forklift.config.schema import GitPin
from forklift.errors import ForkliftError, Interrupted, UsageError, interrupt_point
from forklift.fork.base import base_tag, find_base
from forklift.fork.create import create_fork
from forklift.fork.export import PATCH_NAME
from forklift.fork.repo import Git
from forklift.series.gate import configured_series
from forklift.series.headers import Header
from forklift.series.model import SERIES_FILE, Patch, parse_series_file
from forklift.source.materialize import materialize

if TYPE_CHECKING:
    from rich.console import Console

# Fixed dates make an import reproducible: the same series at the same base gives the same commit ids.
_EPOCH = "1970-01-01T00:00:00+0000"
_FALLBACK_AUTHOR = ("forklift", "forklift@localhost")


@dataclass(frozen=True)
class ImportedCommit:
    patch: str
    commit: str


@dataclass(frozen=True)
class ImportedBranch:
    base: str
    commits: list[ImportedCommit]
    started: str | None = None  # label of the pristine tree when this import started the fork
    tag: str | None = None  # the tag it gave the new fork's base commit


def commit_message(header: Header, patch_name: str) -> str:
    """Subject and body from Description, then the other header fields back as trailers."""
    # a mail's Subject is its description and the mail body the rest of the message; free text of a
    # DEP-3 header follows the Description the same way
    given = (header.fields.get("description", "").strip(), header.body.strip())
    subject, _, body = ("\n\n".join(part for part in given if part) or patch_name).partition("\n")
    trailers = [
        f"{_field_name(k)}: {v}"
        for k, v in header.fields.items()
        if k not in ("description", "author", "export-commit", "date", "patch-name") and "\n" not in v
    ]
    trailers.append(f"{PATCH_NAME}: {patch_name}")  # export writes the patch back under the same name
    parts = [subject.strip()]
    if body.strip():
        parts.append(body.strip())
    if trailers:
        parts.append("\n".join(trailers))
    return "\n\n".join(parts) + "\n"


def _field_name(key: str) -> str:
    return "-".join(part.capitalize() for part in key.split("-"))


def _author(header: Header) -> tuple[str, str]:
    value = header.get("author")
    if "<" in value and value.rstrip().endswith(">"):
        name, email = value.rsplit("<", 1)
        return name.strip() or _FALLBACK_AUTHOR[0], email.rstrip()[:-1].strip()
    return (value.strip(), _FALLBACK_AUTHOR[1]) if value.strip() else _FALLBACK_AUTHOR


def import_series(
    git: Git, base: str, branch: str, patches: tuple[Patch, ...] | list[Patch], force: bool = False
) -> list[ImportedCommit]:
    """Create `branch` at `base` with one commit per patch; fails naming the patch that does not apply."""
    git.ensure_repo()
    base_commit = git.commit_of(base, "base")
    if git.run("check-ref-format", "--branch", branch, check=False).returncode != 0:
        raise ForkliftError(f"{branch!r} is not a valid branch name")
    if not force and git.resolve(f"refs/heads/{branch}") is not None:
        raise ForkliftError(f"{git.repo}: branch {branch!r} already exists (pass --force to replace it)")
    worktree = checked_out(git, branch)
    if worktree is not None and Git(worktree).text("status", "--porcelain", "--untracked-files=no").strip():
        raise ForkliftError(
            f"{worktree}: branch {branch!r} is checked out there with uncommitted changes: commit or discard "
            "them, then import again"
        )
    made: list[ImportedCommit] = []
    with tempfile.TemporaryDirectory(prefix="forklift-import-") as scratch:
        env = {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
        git.run("read-tree", base_commit, env=env)
        parent = base_commit
        for patch in patches:
            proc = git.run(
                "apply",
                "--cached",
                "--whitespace=nowarn",
                f"-p{patch.strip}",
                *([f"--directory={patch.root}"] if patch.root else []),  # [series] root
                "-",
                input=patch.text.encode("utf-8", "surrogateescape"),
                env=env,
                check=False,
            )
            if proc.returncode != 0:
                detail = proc.stderr.decode(errors="replace").strip().splitlines()
                raise ForkliftError(
                    f"{patch.name}: does not apply on top of the previous patches at base "
                    f"{base_commit[:12]}: {detail[0] if detail else 'git apply failed'}"
                )
            tree = git.text("write-tree", env=env).strip()
            name, email = _author(patch.header)
            commit_env = {
                **env,
                "GIT_AUTHOR_NAME": name,
                "GIT_AUTHOR_EMAIL": email,
                "GIT_AUTHOR_DATE": _EPOCH,
                "GIT_COMMITTER_NAME": name,
                "GIT_COMMITTER_EMAIL": email,
                "GIT_COMMITTER_DATE": _EPOCH,
            }
            parent = git.text(
                "commit-tree",
                tree,
                "-p",
                parent,
                "-F",
                "-",
                input=commit_message(patch.header, patch.name).encode(),
                env=commit_env,
            ).strip()
            made.append(ImportedCommit(patch=patch.name, commit=parent))
            interrupt_point("import.patch")
    interrupt_point("import.branch")
    if worktree is None:
        git.run("update-ref", f"refs/heads/{branch}", parent)
    else:  # the branch, its index and its files move together: nothing is left staged back to the old tree
        Git(worktree).run("reset", "-q", "--keep", parent)
    return made


def checked_out(git: Git, branch: str) -> Path | None:
    """The working tree where `branch` is checked out (the main one or a linked one), or None."""
    listing = git.text("worktree", "list", "--porcelain")
    for stanza in listing.split("\n\n"):
        lines = stanza.splitlines()
        if f"branch refs/heads/{branch}" in lines and lines and lines[0].startswith("worktree "):
            return Path(lines[0].removeprefix("worktree "))
    return None


def _patches(config: Config) -> tuple[Patch, ...]:
    """The series' patches; none for a series that lists none yet (a fork starts before its first patch)."""
    series_file = config.series_dir / SERIES_FILE
    if not series_file.is_file() or not parse_series_file(series_file.read_text(encoding="utf-8"), series_file):
        return ()
    return configured_series(config).patches


def import_branch(
    config: Config,
    repo: Path,
    branch: str,
    base: str | None = None,
    force: bool = False,
    progress: Console | None = None,
) -> ImportedBranch:
    """Import the configured series as `branch` of the fork at `repo`, starting the fork there when
    the folder is new (or empty) and the pin has no git history of its own."""

    patches = _patches(config)
    pin = config.data.upstream
    new_folder = not repo.exists() or (repo.is_dir() and not any(repo.iterdir()))
    if not new_folder:
        fork = Git(repo)
        found = find_base(config, base, fork)
        try:
            return ImportedBranch(found, import_series(fork, found, branch, patches, force=force))
        except KeyboardInterrupt:
            raise Interrupted(
                f"forklift import stopped by Ctrl-C before branch {branch} was written: {repo} is as it was"
            ) from None
    if isinstance(pin, GitPin):
        raise UsageError(f"{repo}: no such repository: for a git pin, clone {pin.url} there first")
    tree = materialize(pin, config.root, progress=progress)
    tag = base_tag(pin)
    existed = repo.exists()
    try:
        fork, start = create_fork(tree.path, repo, tag, tree.label)
        interrupt_point("import.created")
        made = import_series(fork, start, branch, patches, force=force)
        fork.run("checkout", "-q", "-f", branch)
    except BaseException as exc:  # a half-made fork (a .git with no checkout) is worse than none
        _remove_contents(repo, keep_folder=existed)
        if isinstance(exc, KeyboardInterrupt):
            raise Interrupted(f"forklift import stopped by Ctrl-C: the new fork {repo} was removed again") from None
        raise
    return ImportedBranch(start, made, started=tree.label, tag=tag)


def _remove_contents(folder: Path, keep_folder: bool) -> None:
    """Remove what an import made in a folder that was new or empty before it started."""
    if not keep_folder:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for child in folder.iterdir() if folder.is_dir() else ():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
