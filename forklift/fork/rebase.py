"""Move the fork to a new upstream release: `forklift rebase NEW --repo FORK --branch B`, finished by `export`.

The new release's pristine tree becomes a commit on the fork (a child of the
old base, tagged as upstream tags it: v0.33.0), and the branch's commits are
re-applied onto it with `git rebase --onto`, so conflicts stop one commit at a
time and the user resolves them with git's own tools (`git rebase --continue`).
The pending move is recorded in the fork's git folder; the `export` that follows
the finished rebase writes the series on the new base and moves forklift.toml's
pin, the series' base line, PATCHES.md and the manifest together, as one step.

A pin that already moved (`forklift flip NEW --write --repo FORK` moves the pin and
the series' base line, not the user's branches) is followed the same way: the
branch moves from the release it sits on to the one the series' base line names.
Ctrl-C during a rebase gives git's rebase up and puts the branch back.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forklift.config import Config
from forklift.config.schema import GitPin, PathPin, PypiPin
from forklift.errors import ForkliftError, Interrupted, UsageError, interrupt_point
from forklift.fork.base import base_tag, find_base
from forklift.fork.create import release_commit
from forklift.fork.export import Export, write_export
from forklift.fork.repo import Git
from forklift.fsio import all_or_nothing, write_atomic
from forklift.series.gate import configured_series, write_patches_md
from forklift.series.model import SERIES_FILE, series_folder_files
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


def given_up(fork: Git, move: PendingMove) -> bool:
    """Whether the recorded move was abandoned (`git rebase --abort`): no rebase runs and the branch is not on
    the new base."""
    tip = fork.resolve(f"refs/heads/{move.branch}")
    return not rebase_in_progress(fork) and (tip is None or not fork.is_ancestor(move.new_base, tip))


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
    fork.ensure_repo()
    if rebase_in_progress(fork):
        raise ForkliftError(f"{fork.repo}: a git rebase is in progress: finish it (`git rebase --continue`) first")
    if fork.text("status", "--porcelain", "--untracked-files=no").strip():
        raise ForkliftError(f"{fork.repo}: the working tree has uncommitted changes: commit or discard them first")
    tip = fork.commit_of(f"refs/heads/{branch}", "branch")
    if version == (pin.version if isinstance(pin, PypiPin) else pin.tag):
        target: PypiPin | GitPin = pin
        new_base = find_base(config, None, fork)  # the pin moved already (flip --write): follow it
        if fork.is_ancestor(new_base, tip):
            raise UsageError(f"{config.path}: the pin is already at {version} and branch {branch!r} is on it")
        old_base = fork.text("merge-base", new_base, tip).strip()
    else:
        old_base = find_base(config, None, fork)
        if not fork.is_ancestor(old_base, tip):
            raise ForkliftError(f"branch {branch!r} ({tip[:12]}) does not descend from the base {old_base[:12]}")
        target = new_pin(pin, version, config.root)
        new_base = _release_base(config, fork, target, old_base, progress)
    commits = len(fork.text("rev-list", f"{old_base}..{tip}").split())
    if not commits:
        moved = target is pin  # the pin is at `version` already: only the branch is left behind
        how = (
            f"start it again on the new base with `forklift -c {config.root} import --branch {branch} --repo "
            f"{fork.repo} --force`"
            if moved
            else f"move an empty series with `forklift -c {config.root} flip {version} --write --repo {fork.repo}`"
        )
        raise UsageError(f"branch {branch!r} has no commits on the base {old_base[:12]}: nothing to rebase; {how}")
    move = PendingMove(version, target.model_dump(exclude_none=True), old_base, new_base, branch)
    try:
        _state_path(fork).write_text(json.dumps(asdict(move), indent=2) + "\n", encoding="utf-8")
        proc = fork.run("rebase", "-q", "--onto", new_base, old_base, branch, env=_identity(fork), check=False)
        interrupt_point("rebase.git")
    except KeyboardInterrupt:
        _undo(fork, branch, tip)
        raise Interrupted(
            f"forklift rebase stopped by Ctrl-C: git's rebase was given up and branch {branch} is back at "
            f"{tip[:12]} (release {version} stays in the fork as {new_base[:12]}; a later rebase reuses it)"
        ) from None
    if proc.returncode == 0:
        return RebaseOutcome(move, commits)
    if not rebase_in_progress(fork):
        finish_move(fork)
        detail = proc.stderr.decode(errors="replace").strip().splitlines()
        raise ForkliftError(f"{fork.repo}: git rebase failed: {detail[-1] if detail else proc.returncode}")
    stopped = fork.text("log", "-1", "--format=%H %s", "REBASE_HEAD", check=False).strip()
    conflicted = tuple(fork.text("diff", "--name-only", "--diff-filter=U").split())
    return RebaseOutcome(
        move, commits, stopped_at=stopped[:12] + stopped[40:] if stopped else None, conflicted=conflicted
    )


def _release_base(config: Config, fork: Git, target: PypiPin | GitPin, old_base: str, progress: Console | None) -> str:
    """The fork commit of the release `target` pins: upstream's tag commit, or the pristine tree's commit."""
    if isinstance(target, GitPin):
        new_base = fork.resolve(target.commit)
        if new_base is None:
            raise ForkliftError(
                f"{fork.repo}: upstream's {target.tag} ({target.commit[:12]}) is not in the fork: "
                f"`git -C {fork.repo} fetch {target.url} tag {target.tag}` first"
            )
        return new_base
    tree = materialize(target, config.root, progress=progress)
    return release_commit(fork, tree.path, base_tag(target), tree.label, parent=old_base)


def _undo(fork: Git, branch: str, tip: str) -> None:
    """Put `branch` back where a cut rebase found it and forget the move."""
    if rebase_in_progress(fork):
        fork.run("rebase", "--abort", check=False)
    if fork.resolve(f"refs/heads/{branch}") != tip:
        fork.run("update-ref", f"refs/heads/{branch}", tip)
        if fork.text("symbolic-ref", "-q", "HEAD", check=False).strip() == f"refs/heads/{branch}":
            fork.run("reset", "-q", "--hard", tip)  # the rebase had finished: its files go back with the branch
    finish_move(fork)


def off_the_pin(config: Config, fork: Git, base: str, ref: str) -> str | None:
    """Why `ref` cannot stand for the series: it does not sit on the pinned release's base (the pin moved with
    `flip --write`, the branch did not), with the command that moves it; None when it descends from the base."""
    pin = config.data.upstream
    tip, base_commit = fork.resolve(ref), fork.resolve(base)
    if isinstance(pin, PathPin) or tip is None or base_commit is None or fork.is_ancestor(base_commit, tip):
        return None
    version = pin.version if isinstance(pin, PypiPin) else pin.tag
    return (
        f"fork ref {ref!r} ({tip[:12]}) is not on the pinned release {version} (base {base_commit[:12]}): "
        f"move it with `forklift -c {config.root} rebase {version} --repo {fork.repo} --branch BRANCH`, then export"
    )


def write_exported(config: Config, fork: Git, export: Export, move: PendingMove | None) -> tuple[list[str], list[Path]]:
    """Write an export as one step: the patches and patches/series, then (finishing a rebase) forklift.toml's
    pin, its contract and the manifest, then PATCHES.md. Ctrl-C puts every file back as it was (a pending
    move stays pending: the same export finishes it). Returns (patch files removed, other files written)."""
    series_dir = config.series_dir
    paths = [
        *series_folder_files(series_dir),
        *(series_dir / p.name for p in export.patches),
        series_dir / SERIES_FILE,
        config.path,
    ]
    if config.patches_md is not None:
        paths.append(config.patches_md)
    try:
        with all_or_nothing(paths):
            removed = write_export(export, series_dir)
            interrupt_point("export.series")
            written = _move_pin(config, move) if move is not None else []
            interrupt_point("export.pin")
            if config.patches_md is not None:
                written.append(write_patches_md(config))
    except KeyboardInterrupt:
        finish = "" if move is None else f" (the move to {move.version} is still pending: export again finishes it)"
        raise Interrupted(
            f"forklift export stopped by Ctrl-C: {series_dir}, {config.path.name} and PATCHES.md are as they "
            f"were{finish}"
        ) from None
    if move is not None:
        finish_move(fork)
    return removed, written


def _move_pin(config: Config, move: PendingMove) -> list[Path]:
    """forklift.toml's pin (and contract) and the manifest follow the exported series onto the new release."""
    pin = move.target()
    fresh = configured_series(config)
    gone = set(config.data.series.contract) - {patch.name for patch in fresh.patches}
    write_atomic(config.path, moved_toml(config, pin, gone))
    return [config.path, *follow_manifest(config, fresh)]
