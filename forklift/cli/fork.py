"""Commands of the fork round-trip: export, import, replay, source bind/verify, manifest."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Optional

import typer

from forklift.cli.app import app, console, load
from forklift.errors import ForkliftError

source_app = typer.Typer(
    help="Bind the release to the fork commit its series came from (the SOURCE file).", no_args_is_help=True
)
app.add_typer(source_app, name="source")

SHOWN_DIFFERENCES = 20  # replay lists this many files, then a count
REPO_OPTION = typer.Option(Path("."), "--repo", help="the fork's git repository")
BASE_OPTION = typer.Option(None, "--base", help="fork commit of the pristine tree (PyPI/path pins; export records it)")


def _shown(path: Path) -> Path:
    """A path as the user would type it here: relative to the current folder when it is inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _pristine(config):
    from forklift.source import materialize

    return materialize(config.data.upstream, config.root, progress=console)


def _release(config, move):
    """The tree of the release a pending rebase moves to (the pin it recorded)."""
    from forklift.source import materialize

    return materialize(move.target(), config.root, progress=console)


@app.command("export")
def export_command(
    ref: str = typer.Option(..., "--from", help="the fork branch or commit to export (its commits since the base)"),
    repo: Path = REPO_OPTION,
    base: Optional[str] = BASE_OPTION,
    check: bool = typer.Option(False, "--check", help="only compare with the committed series; exit 1 on drift"),
    drop_outside: bool = typer.Option(
        False, "--drop-outside", help="export without files outside upstream's tree (each is listed)"
    ),
) -> None:
    """Write one normalized patch per fork commit and rewrite patches/series (byte-identical on re-export)."""
    from forklift.fork.base import find_base
    from forklift.fork.export import export_drift, export_fork, write_export
    from forklift.fork.git import Git
    from forklift.fork.rebase import pending_move, rebase_in_progress
    from forklift.fork.upstream import UpstreamPaths

    config = load()
    fork = Git(repo)
    move = pending_move(fork)
    if move is not None and rebase_in_progress(fork):
        raise ForkliftError(
            f"{repo}: the rebase onto {move.version} is not finished: resolve, `git -C {repo} rebase --continue`, "
            "then export"
        )
    tree = _pristine(config) if move is None else _release(config, move)
    base = move.new_base if move is not None else find_base(config, base, fork)
    upstream = UpstreamPaths.from_tree(tree.path)
    export = export_fork(fork, base, ref, upstream, drop_outside=drop_outside, series_dir=config.series_dir)
    for patch in export.patches:
        for path in patch.dropped:
            console.print(
                f"[yellow]dropped[/] {path} from {patch.name} (commit {patch.commit[:12]}): outside upstream's tree"
            )
    if check:
        drift = export_drift(export, config.series_dir)
        for line in drift:
            console.print(f"[red]drift[/] {line}", soft_wrap=True)
        if drift:
            command = f"forklift -c {_shown(config.root)} export --from {ref} --repo {repo}"
            console.print(f"[red]FAILED[/] {len(drift)} drifted: run `{command}` and commit", soft_wrap=True)
            raise typer.Exit(1)
        console.print(f"[green]OK[/] {len(export.patches)} patches match a fresh export of {ref} ({export.tip[:12]})")
        return
    removed = write_export(export, config.series_dir)
    if move is not None:  # the rebase is done and exported: the pin, the manifest and PATCHES.md follow
        from forklift.fork.rebase import finish_rebase

        for path in finish_rebase(config, fork, move):
            console.print(f"wrote {_shown(path)}")
        console.print(f"moved the pin to {move.version}: {_shown(config.path)} and the series' base line name it")
        config = load()
    if config.patches_md is not None:
        from forklift.series.gate import write_patches_md

        console.print(f"wrote {write_patches_md(config)}")
    for patch in export.patches:
        console.print(f"{patch.name}  <- {patch.commit[:12]} {patch.subject}")
        if patch.normalised:
            console.print(f"  [yellow]normalised[/] its {patch.normalised} (the change itself is as committed)")
    for name in removed:
        console.print(f"[yellow]removed[/] {name} (no longer on the fork branch)")
    console.print(f"wrote {len(export.patches)} patches and {config.series_dir / 'series'} (base {export.base[:12]})")


@app.command("import")
def import_command(
    branch: str = typer.Option(..., "--branch", help="the branch to create, one commit per patch"),
    repo: Path = REPO_OPTION,
    base: Optional[str] = BASE_OPTION,
    force: bool = typer.Option(False, "--force", help="replace the branch if it exists"),
) -> None:
    """Make a git branch at the pinned base with one commit per patch, for editing the series as commits.

    For a PyPI or path pin, a --repo folder that does not exist yet becomes a new fork: the pristine
    tree as the base commit on main (tagged v<version>; forklift-base for a path pin), the
    branch checked out on top of it."""
    from forklift.fork.importer import import_branch

    result = import_branch(load(), repo, branch, base, force=force, progress=console)
    if result.started:
        console.print(f"created the fork {repo}: {result.started} as {result.base[:12]} on main, tagged {result.tag}")
    for item in result.commits:
        console.print(f"{item.commit[:12]} {item.patch}")
    console.print(f"branch {branch}: {len(result.commits)} commits on {result.base[:12]}")


@app.command()
def rebase(
    version: str = typer.Argument(..., help="the upstream version (PyPI) or tag (git) to move the fork to"),
    repo: Path = REPO_OPTION,
    branch: str = typer.Option(..., "--branch", help="the fork branch to move (its commits since the base)"),
) -> None:
    """Move the fork to a new release: its pristine commit and tag, then `git rebase --onto` it; export finishes."""
    from forklift.fork.git import Git
    from forklift.fork.rebase import start_rebase

    config = load()
    outcome = start_rebase(config, Git(repo), version, branch, progress=console)
    move = outcome.move
    export = f"forklift -c {_shown(config.root)} export --from {branch} --repo {repo}"
    console.print(f"release {version} is {move.new_base[:12]} on the fork (the old base was {move.old_base[:12]})")
    if outcome.stopped_at is None:
        console.print(
            f"[green]rebased[/] {outcome.commits} commits of {branch} onto it; now run `{export}`", soft_wrap=True
        )
        return
    files = ", ".join(outcome.conflicted) or "see git status"
    console.print(f"[red]conflict[/] in {outcome.stopped_at}: {files}", soft_wrap=True)
    console.print(
        f"resolve the files, `git -C {repo} add FILES`, `git -C {repo} rebase --continue` (one commit at a time, "
        f"as git rebase does; `git -C {repo} rebase --abort` gives up); when the rebase is done, run `{export}`",
        soft_wrap=True,  # commands stay whole, to copy
    )
    raise typer.Exit(1)


@app.command()
def replay(
    against: Optional[str] = typer.Option(
        None, "--against", help="fork ref to compare with (default: SOURCE's commit)"
    ),
    repo: Path = REPO_OPTION,
) -> None:
    """Apply the series to the pristine tree and compare with the fork's tree over upstream's paths."""
    from forklift.errors import UsageError
    from forklift.fork.base import base_mismatch, find_base
    from forklift.fork.binding import SOURCE_FILE, load_binding
    from forklift.fork.git import Git
    from forklift.fork.replay import replay as run_replay
    from forklift.series.model import load_series

    config = load()
    ref = against or load_binding(config.root / SOURCE_FILE).commit
    fork = Git(repo)
    fork.ensure_repo()
    mismatch = base_mismatch(config, fork)
    if mismatch:  # named first: every upstream file that moved between the releases would read as a difference
        console.print(f"[red]base mismatch[/] {mismatch}", soft_wrap=True)
    try:
        base = None if mismatch else find_base(config, None, fork)
    except UsageError:
        base = None  # without a known base every upstream file is compared
    result = run_replay(fork, ref, _pristine(config).path, load_series(config.series_dir).patches, base)
    if result.not_in_base:
        shown = ", ".join(result.not_in_base[:3]) + (" ..." if len(result.not_in_base) > 3 else "")
        console.print(
            f"not compared: {len(result.not_in_base)} upstream files the fork's base {base[:12]} never "
            f"had (generated into the release: {shown})"
        )
    for difference in result.differences[:SHOWN_DIFFERENCES]:
        console.print(f"[red]differs[/] {difference}")
    if len(result.differences) > SHOWN_DIFFERENCES:
        console.print(f"... and {len(result.differences) - SHOWN_DIFFERENCES} more differing files")
    verdict = "[green]identical[/]" if result.identical else "[red]NOT identical[/]"
    console.print(
        f"{len(result.differences)} differing files of {result.compared} compared "
        f"(series vs {ref} at {result.tip[:12]}): {verdict}"
    )
    if not result.identical:
        raise typer.Exit(1)


def _report_binding(failures) -> None:
    for failure in failures:
        console.print(f"[red]FAIL[/] {failure}")
    if failures:
        raise typer.Exit(1)


@source_app.command("bind")
def source_bind(
    commit: str = typer.Argument(..., help="the fork commit the series was exported from"),
    branch: str = typer.Option(..., "--branch", help="the published branch as a ref of the fork repo (origin/NAME)"),
    tag: Optional[str] = typer.Option(None, "--tag", help="upstream tag in the fork that must keep naming the base"),
    repo: Path = REPO_OPTION,
) -> None:
    """Record COMMIT in SOURCE after checking it exists, is published, descends from the base and moves forward."""
    from forklift.fork.base import binding_base
    from forklift.fork.binding import SOURCE_FILE, SourceBinding, load_binding, verify_binding
    from forklift.fork.git import Git
    from forklift.fsio import write_atomic

    config = load()
    fork = Git(repo)
    fork.ensure_repo()
    path = config.root / SOURCE_FILE
    previous = load_binding(path).commit if path.exists() else None
    base, pinned_tag = binding_base(config, fork)
    binding = SourceBinding(commit=fork.commit_of(commit, "fork commit"), branch=branch, tag=tag or pinned_tag)
    _report_binding(verify_binding(fork, binding, base, previous))
    write_atomic(path, binding.render())
    console.print(f"wrote {path}: {binding.commit[:12]} on {branch}")


@source_app.command("verify")
def source_verify(repo: Path = REPO_OPTION) -> None:
    """Check SOURCE: the commit exists, is on the published branch, descends from the base, only moved forward."""
    from forklift.fork.base import binding_base
    from forklift.fork.binding import SOURCE_FILE, load_binding, previous_commit, verify_binding
    from forklift.fork.git import Git

    config = load()
    path = config.root / SOURCE_FILE
    binding = load_binding(path)
    fork = Git(repo)
    base, pinned_tag = binding_base(config, fork)
    if pinned_tag and not binding.tag:
        binding = replace(binding, tag=pinned_tag)
    _report_binding(verify_binding(fork, binding, base, previous_commit(path, binding.commit)))
    console.print(f"[green]OK[/] {binding.commit[:12]} is published on {binding.branch} and descends from {base[:12]}")


@app.command()
def manifest(
    write: bool = typer.Option(False, "--write", help="(re)write patches/MANIFEST.toml from today's series"),
) -> None:
    """Check the lost-work manifest against the series, or write one requiring every file it changes today."""
    from forklift.fsio import tree_reader
    from forklift.series.manifest import changed_paths, check_manifest, write_manifest
    from forklift.series.model import load_series

    config = load()
    series = load_series(config.series_dir)
    changed = changed_paths(tree_reader(_pristine(config).path), series.patches)
    if write:
        console.print(f"wrote {write_manifest(config.series_dir, changed)}: {len(changed)} files")
        return
    lost = check_manifest(config.series_dir, series.patches, changed)
    for item in lost:
        console.print(f"[red]lost work[/] {item.message}")
    if lost:
        raise typer.Exit(1)
    console.print("[green]OK[/] the series carries everything the manifest requires")
