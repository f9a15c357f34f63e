"""Commands of the fork round-trip: export, import, replay, source bind/verify, manifest."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer

from forklift.cli.app import app, console, load

source_app = typer.Typer(
    help="Bind the release to the fork commit its series came from (the SOURCE file).", no_args_is_help=True
)
app.add_typer(source_app, name="source")

REPO_OPTION = typer.Option(Path("."), "--repo", help="the fork's git repository")
BASE_OPTION = typer.Option(None, "--base", help="fork commit of the pristine tree (PyPI/path pins; export records it)")


def _pristine(config):
    from forklift.source import materialize

    return materialize(config.data.upstream, config.root, progress=console)


@app.command("export")
def export_command(
    ref: str = typer.Option(..., "--from", help="the fork branch or commit to export (its commits since the base)"),
    repo: Path = REPO_OPTION,
    base: str | None = BASE_OPTION,
    check: bool = typer.Option(False, "--check", help="only compare with the committed series; exit 1 on drift"),
    drop_outside: bool = typer.Option(
        False, "--drop-outside", help="export without files outside upstream's tree (each is listed)"
    ),
) -> None:
    """Write one normalized patch per fork commit and rewrite patches/series (byte-identical on re-export)."""
    from forklift.fork.base import find_base
    from forklift.fork.export import export_drift, export_fork, write_export
    from forklift.fork.git import Git
    from forklift.fork.upstream import UpstreamPaths

    config = load()
    fork = Git(repo)
    upstream = UpstreamPaths.from_tree(_pristine(config).path)
    export = export_fork(fork, find_base(config, base, fork), ref, upstream, drop_outside=drop_outside)
    for patch in export.patches:
        for path in patch.dropped:
            console.print(
                f"[yellow]dropped[/] {path} from {patch.name} (commit {patch.commit[:12]}): outside upstream's tree"
            )
    if check:
        drift = export_drift(export, config.series_dir)
        for line in drift:
            console.print(f"[red]drift[/] {line}")
        if drift:
            console.print(f"[red]FAILED[/] {len(drift)} drifted: run `forklift export --from {ref}` and commit")
            raise typer.Exit(1)
        console.print(f"[green]OK[/] {len(export.patches)} patches match a fresh export of {ref} ({export.tip[:12]})")
        return
    removed = write_export(export, config.series_dir)
    if config.patches_md is not None:
        from forklift.series.gate import write_patches_md

        console.print(f"wrote {write_patches_md(config)}")
    for patch in export.patches:
        console.print(f"{patch.name}  <- {patch.commit[:12]} {patch.subject}")
    for name in removed:
        console.print(f"[yellow]removed[/] {name} (no longer on the fork branch)")
    console.print(f"wrote {len(export.patches)} patches and {config.series_dir / 'series'} (base {export.base[:12]})")


@app.command("import")
def import_command(
    branch: str = typer.Option(..., "--branch", help="the branch to create, one commit per patch"),
    repo: Path = REPO_OPTION,
    base: str | None = BASE_OPTION,
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
def replay(
    against: str | None = typer.Option(None, "--against", help="fork ref to compare with (default: SOURCE's commit)"),
    repo: Path = REPO_OPTION,
) -> None:
    """Apply the series to the pristine tree and compare with the fork's tree over upstream's paths."""
    from forklift.errors import UsageError
    from forklift.fork.base import find_base
    from forklift.fork.binding import SOURCE_FILE, load_binding
    from forklift.fork.git import Git
    from forklift.fork.replay import replay as run_replay
    from forklift.series.model import load_series

    config = load()
    ref = against or load_binding(config.root / SOURCE_FILE).commit
    fork = Git(repo)
    fork.ensure_repo()
    try:
        base = find_base(config, None, fork)
    except UsageError:
        base = None  # without a known base every upstream file is compared
    result = run_replay(fork, ref, _pristine(config).path, load_series(config.series_dir).patches, base)
    if result.not_in_base:
        shown = ", ".join(result.not_in_base[:3]) + (" ..." if len(result.not_in_base) > 3 else "")
        console.print(
            f"not compared: {len(result.not_in_base)} upstream files the fork's base {base[:12]} never "
            f"had (generated into the release: {shown})"
        )
    for difference in result.differences:
        console.print(f"[red]differs[/] {difference}")
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
    tag: str | None = typer.Option(None, "--tag", help="upstream tag in the fork that must keep naming the base"),
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
