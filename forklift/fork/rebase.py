"""Move the fork to a new upstream release: `forklift rebase NEW --repo FORK --branch B`, finished by `export`.

The new release's pristine tree becomes a commit on the fork (a child of the
old base, tagged as upstream tags it: v0.33.0), and the branch's commits are
re-applied onto it with `git rebase --onto`, so conflicts stop one commit at a
time and the user resolves them with git's own tools (`git rebase --continue`).
The pending move is recorded in the fork's git folder; the `export` that follows
the finished rebase writes the series on the new base and moves forklift.toml's
pin, the series' base line, PATCHES.md and the manifest together.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forklift.config import Config
from forklift.config.schema import GitPin, PathPin, PypiPin
from forklift.errors import ForkliftError, UsageError
from forklift.fork.base import base_tag, find_base
from forklift.fork.create import release_commit
from forklift.fork.repo import Git
from forklift.fsio import write_atomic
from forklift.series.gate import configured_series
from forklift.series.move import follow_manifest, moved_toml, new_pin
from forklift.source.materialize import materialize

if TYPE_CHECKING:
    from rich.console import Console

STATE_FILE = "forklift-rebase.json"
_FALLBACK_IDENTITY = {"GIT_COMMITTER_NAME": "forklift", "GIT_COMMITTER_EMAIL": "forklift@localhost"}


@dataclass(frozen=True)
class PendingMove:
    """A rebase of `branch` from `old_base` onto `new_base`, the release `pin` names."""

    version: str
    pin: dict[str, Any]
    old_base: str
    new_base: str
    branch: str

    def target(self) -> PypiPin | GitPin:
        return (GitPin if self.pin.get("source") == "git" else PypiPin)(**self.pin)


@dataclass(frozen=True)
class RebaseOutcome:
    move: PendingMove
    commits: int
    stopped_at: str | None = None  # "abc123456789 subject" of the commit that conflicts
    conflicted: tuple[str, ...] = ()


def _state_path(fork: Git) -> Path:
    return Path(fork.text("rev-parse", "--absolute-git-dir").strip()) / STATE_FILE


def pending_move(fork: Git) -> PendingMove | None:
    """The move `forklift rebase` started in this fork and no export has finished, if any."""
    if fork.run("rev-parse", "--git-dir", check=False).returncode != 0:
        return None
    path = _state_path(fork)
    try:
        return PendingMove(**json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError):
        raise ForkliftError(f"{path}: not a forklift rebase record (delete it to forget the pending move)") from None


def finish_move(fork: Git) -> None:
    _state_path(fork).unlink(missing_ok=True)


def rebase_in_progress(fork: Git) -> bool:
    """git's own marker folders of a rebase stopped on a conflict (a path git gives may be relative)."""
    return any(
        (fork.repo / fork.text("rev-parse", "--git-path", name).strip()).exists()
        for name in ("rebase-merge", "rebase-apply")
    )


def _identity(fork: Git) -> dict[str, str]:
    """git rebase writes commits: give it a committer when the fork's config names none."""
    if fork.run("config", "user.email", check=False).returncode == 0:
        return {}
    return _FALLBACK_IDENTITY


def start_rebase(
    config: Config, fork: Git, version: str, branch: str, progress: Console | None = None
) -> RebaseOutcome:
    """Create the new release's commit, record the pending move, and rebase `branch` onto it."""

    pin = config.data.upstream
    if isinstance(pin, PathPin):
        raise UsageError(f"{config.path}: upstream.source is 'path': a local pin has no versions to move to")
    if version == (pin.version if isinstance(pin, PypiPin) else pin.tag):
        raise UsageError(f"{config.path}: the pin is already at {version}")
    fork.ensure_repo()
    if rebase_in_progress(fork):
        raise ForkliftError(f"{fork.repo}: a git rebase is in progress: finish it (`git rebase --continue`) first")
    if fork.text("status", "--porcelain", "--untracked-files=no").strip():
        raise ForkliftError(f"{fork.repo}: the working tree has uncommitted changes: commit or discard them first")
    tip = fork.commit_of(f"refs/heads/{branch}", "branch")
    old_base = find_base(config, None, fork)
    if not fork.is_ancestor(old_base, tip):
        raise ForkliftError(f"branch {branch!r} ({tip[:12]}) does not descend from the base {old_base[:12]}")
    target = new_pin(pin, version, config.root)
    if isinstance(target, GitPin):
        new_base = fork.resolve(target.commit)
        if new_base is None:
            raise ForkliftError(
                f"{fork.repo}: upstream's {target.tag} ({target.commit[:12]}) is not in the fork: "
                f"`git -C {fork.repo} fetch {target.url} tag {target.tag}` first"
            )
    else:
        tree = materialize(target, config.root, progress=progress)
        new_base = release_commit(fork, tree.path, base_tag(target), tree.label, parent=old_base)
    move = PendingMove(version, target.model_dump(exclude_none=True), old_base, new_base, branch)
    _state_path(fork).write_text(json.dumps(asdict(move), indent=2) + "\n", encoding="utf-8")
    commits = len(fork.text("rev-list", f"{old_base}..{tip}").split())
    proc = fork.run("rebase", "-q", "--onto", new_base, old_base, branch, env=_identity(fork), check=False)
    if proc.returncode == 0:
        return RebaseOutcome(move, commits)
    if not rebase_in_progress(fork):
        detail = proc.stderr.decode(errors="replace").strip().splitlines()
        raise ForkliftError(f"{fork.repo}: git rebase failed: {detail[-1] if detail else proc.returncode}")
    stopped = fork.text("log", "-1", "--format=%H %s", "REBASE_HEAD", check=False).strip()
    conflicted = tuple(fork.text("diff", "--name-only", "--diff-filter=U").split())
    return RebaseOutcome(
        move, commits, stopped_at=stopped[:12] + stopped[40:] if stopped else None, conflicted=conflicted
    )


def finish_rebase(config: Config, fork: Git, move: PendingMove) -> list[Path]:
    """After the export of the rebased branch: forklift.toml's pin (and contract) and the manifest follow the
    series onto the new release, and the pending move is forgotten. Returns the files written."""

    pin = move.target()
    fresh = configured_series(config)
    gone = set(config.data.series.contract) - {patch.name for patch in fresh.patches}
    write_atomic(config.path, moved_toml(config, pin, gone))
    written = [config.path, *follow_manifest(config, fresh)]
    finish_move(fork)
    return written
