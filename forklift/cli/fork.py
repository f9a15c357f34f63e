"""Commands of the fork round-trip: export, import, replay (bind/verify are `forklift source`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from forklift.cli.app import FORK, app, console, load, say
from forklift.cli.source import RepoOption
from forklift.errors import ForkliftError

if TYPE_CHECKING:
    from forklift.config import Config
    from forklift.fork.rebase import PendingMove
    from forklift.source.materialize import Tree

SHOWN_DIFFERENCES = 20  # replay lists this many files, then a count
BaseOption = Annotated[
    str | None, typer.Option("--base", help="fork commit of the pristine tree (PyPI/path pins; export records it)")
]


def _shown(path: Path) -> Path:
    """A path as the user would type it here: relative to the current folder when it is inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _release(config: Config, move: PendingMove) -> Tree:
    """The tree of the release a pending rebase moves to (the pin it recorded)."""
    from forklift.source.materialize import materialize

    return materialize(move.target(), config.root, progress=console)


@app.command("export", rich_help_panel=FORK)
def export_command(
    ref: Annotated[
        str, typer.Option("--from", help="the fork branch or commit to export (its commits since the base)")
    ],
    repo: RepoOption = Path("."),
    base: BaseOption = None,
    check: Annotated[
        bool, typer.Option("--check", help="only compare with the committed series; exit 1 on drift")
    ] = False,
    drop_outside: Annotated[
        bool, typer.Option("--drop-outside", help="export without files outside upstream's tree (each is listed)")
    ] = False,
) -> None:
    """Write one normalized patch per fork commit and rewrite patches/series (byte-identical on re-export)."""
    from forklift.fork.base import find_base
    from forklift.fork.export import export_drift, export_fork
    from forklift.fork.rebase import finish_move, given_up, off_the_pin, pending_move, rebase_in_progress
    from forklift.fork.repo import Git
    from forklift.fork.upstream import UpstreamPaths

    config = load()
    fork = Git(repo)
    move = pending_move(fork)
    if move is not None and rebase_in_progress(fork):
        raise ForkliftError(
            f"{repo}: the rebase onto {move.version} is not finished: resolve, `git -C {repo} rebase --continue`, "
            "then export"
        )
    if move is not None and given_up(fork, move):
        if not check:
            finish_move(fork)
        say(f"the rebase onto {move.version} was given up (branch {move.branch} is not on it): exporting on the pin")
        move = None
    from forklift.source.materialize import pinned_tree

    tree = pinned_tree(config, progress=console) if move is None else _release(config, move)
    base = move.new_base if move is not None else find_base(config, base, fork)
    behind = off_the_pin(config, fork, base, ref) if move is None else None
    if behind:
        raise ForkliftError(behind)
    upstream = UpstreamPaths.from_tree(tree.path)
    export = export_fork(
        fork,
        base,
        ref,
        upstream,
        drop_outside=drop_outside,
        series_dir=config.series_dir,
        root=config.data.series.root,
        applier=config.data.series.applier,
    )
    for patch in export.patches:
        for path in patch.dropped:
            say(
                ("dropped", "yellow"),
                f" {path} from {patch.name} (commit {patch.commit[:12]}): outside upstream's tree",
            )
    if check:
        drift = export_drift(export, config.series_dir)
        for line in drift:
            say(("drift", "red"), f" {line}")
        if drift:
            command = f"forklift -c {_shown(config.root)} export --from {ref} --repo {repo}"
            say(("FAILED", "red"), f" {len(drift)} drifted: run `{command}` and commit")
            raise typer.Exit(1)
        say(("OK", "green"), f" {len(export.patches)} patches match a fresh export of {ref} ({export.tip[:12]})")
        return
    from forklift.fork.rebase import write_exported

    removed, written = write_exported(config, fork, export, move)
    for file in written:
        say(f"wrote {_shown(file)}")
    if move is not None:
        say(f"moved the pin to {move.version}: {_shown(config.path)} and the series' base line name it")
    for patch in export.patches:
        say(f"{patch.name}  <- {patch.commit[:12]} {patch.subject}")
        if patch.normalised:
            say("  ", ("normalised", "yellow"), f" its {patch.normalised} (the change itself is as committed)")
    for name in removed:
        say(("removed", "yellow"), f" {name} (no longer on the fork branch)")
    say(f"wrote {len(export.patches)} patches and {config.series_dir / 'series'} (base {export.base[:12]})")


@app.command("import", rich_help_panel=FORK)
def import_command(
    branch: Annotated[str, typer.Option("--branch", help="the branch to create, one commit per patch")],
    repo: RepoOption = Path("."),
    base: BaseOption = None,
    force: Annotated[bool, typer.Option("--force", help="replace the branch if it exists")] = False,
) -> None:
    """Make a git branch at the pinned base with one commit per patch, for editing the series as commits.

    For a PyPI or path pin, a --repo folder that does not exist yet becomes a new fork: the pristine
    tree as the base commit on main (tagged v<version>; forklift-base for a path pin), the
    branch checked out on top of it."""
    from forklift.fork.importer import import_branch

    result = import_branch(load(), repo, branch, base, force=force, progress=console)
    if result.started:
        say(f"created the fork {repo}: {result.started} as {result.base[:12]} on main, tagged {result.tag}")
    for item in result.commits:
        say(f"{item.commit[:12]} {item.patch}")
    say(f"branch {branch}: {len(result.commits)} commits on {result.base[:12]}")


@app.command(rich_help_panel=FORK)
def rebase(
    version: Annotated[str, typer.Argument(help="the upstream version (PyPI) or tag (git) to move the fork to")],
    branch: Annotated[str, typer.Option("--branch", help="the fork branch to move (its commits since the base)")],
    repo: RepoOption = Path("."),
) -> None:
    """Move the fork to a new release: its pristine commit and tag, then `git rebase --onto` it; export finishes."""
    from forklift.fork.rebase import start_rebase
    from forklift.fork.repo import Git

    config = load()
    outcome = start_rebase(config, Git(repo), version, branch, progress=console)
    move = outcome.move
    export = f"forklift -c {_shown(config.root)} export --from {branch} --repo {repo}"
    say(f"release {version} is {move.new_base[:12]} on the fork (the old base was {move.old_base[:12]})")
    if outcome.stopped_at is None:
        say(("rebased", "green"), f" {outcome.commits} commits of {branch} onto it; now run `{export}`")
        return
    files = ", ".join(outcome.conflicted) or "see git status"
    say(("conflict", "red"), f" in {outcome.stopped_at}: {files}")
    say(
        f"resolve the files, `git -C {repo} add FILES`, `git -C {repo} rebase --continue` (one commit at a time, "
        f"as git rebase does; `git -C {repo} rebase --abort` gives up); when the rebase is done, run `{export}`"
    )
    raise typer.Exit(1)


@app.command(rich_help_panel=FORK)
def replay(
    against: Annotated[
        str | None, typer.Option("--against", help="fork ref to compare with (default: SOURCE's commit)")
    ] = None,
    repo: RepoOption = Path("."),
) -> None:
    """Apply the series to the pristine tree and compare with the fork's tree over upstream's paths."""
    from forklift.errors import UsageError
    from forklift.fork.base import base_mismatch, find_base
    from forklift.fork.binding import SOURCE_FILE, load_binding
    from forklift.fork.rebase import off_the_pin
    from forklift.fork.replay import replay_series
    from forklift.fork.repo import Git
    from forklift.series.gate import configured_series

    config = load()
    ref = against or load_binding(config.root / SOURCE_FILE).commit
    fork = Git(repo)
    fork.ensure_repo()
    mismatch = base_mismatch(config, fork)
    if mismatch:  # named first: every upstream file that moved between the releases would read as a difference
        say(("base mismatch", "red"), f" {mismatch}")
    base: str | None
    try:
        base = None if mismatch else find_base(config, None, fork)
    except UsageError:
        base = None  # without a known base every upstream file is compared
    behind = off_the_pin(config, fork, base, ref) if base else None
    if behind:
        say(("not on the pin", "red"), f" {behind}")
        raise typer.Exit(1)
    series = configured_series(config, empty=True)
    from forklift.source.materialize import pinned_tree

    result = replay_series(fork, ref, pinned_tree(config, progress=console).path, series.patches, series.applier, base)
    if result.not_in_base:
        shown = ", ".join(result.not_in_base[:3]) + (" ..." if len(result.not_in_base) > 3 else "")
        say(
            f"not compared: {len(result.not_in_base)} upstream files the fork's base {(base or '?')[:12]} never "
            f"had (generated into the release: {shown})"
        )
    for difference in result.differences[:SHOWN_DIFFERENCES]:
        say(("differs", "red"), f" {difference}")
    if len(result.differences) > SHOWN_DIFFERENCES:
        say(f"... and {len(result.differences) - SHOWN_DIFFERENCES} more differing files")
    verdict = ("identical", "green") if result.identical else ("NOT identical", "red")
    say(
        f"{len(result.differences)} differing files of {result.compared} compared "
        f"(series vs {ref} at {result.tip[:12]}): ",
        verdict,
    )
    if not result.identical:
        raise typer.Exit(1)
