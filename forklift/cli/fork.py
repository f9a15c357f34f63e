"""Commands of the fork round-trip: export, import, replay (bind/verify are `forklift source`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from forklift.cli.app import FORK, app, load, say
from forklift.cli.source import RepoOption, pristine

BaseOption = Annotated[
    str | None, typer.Option("--base", help="fork commit of the pristine tree (PyPI/path pins; export records it)")
]


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
    from forklift.fork.export import export_drift, export_fork, write_export
    from forklift.fork.git import Git
    from forklift.fork.upstream import UpstreamPaths

    config = load()
    fork = Git(repo)
    upstream = UpstreamPaths.from_tree(pristine(config).path)
    export = export_fork(fork, find_base(config, base, fork), ref, upstream, drop_outside=drop_outside)
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
            say(("FAILED", "red"), f" {len(drift)} drifted: run `forklift export --from {ref}` and commit")
            raise typer.Exit(1)
        say(("OK", "green"), f" {len(export.patches)} patches match a fresh export of {ref} ({export.tip[:12]})")
        return
    removed = write_export(export, config.series_dir)
    if config.patches_md is not None:
        from forklift.series.gate import write_patches_md

        say(f"wrote {write_patches_md(config)}")
    for patch in export.patches:
        say(f"{patch.name}  <- {patch.commit[:12]} {patch.subject}")
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
    from forklift.cli.app import console
    from forklift.fork.importer import import_branch

    result = import_branch(load(), repo, branch, base, force=force, progress=console)
    if result.started:
        say(f"created the fork {repo}: {result.started} as {result.base[:12]} on main, tagged {result.tag}")
    for item in result.commits:
        say(f"{item.commit[:12]} {item.patch}")
    say(f"branch {branch}: {len(result.commits)} commits on {result.base[:12]}")


@app.command(rich_help_panel=FORK)
def replay(
    against: Annotated[
        str | None, typer.Option("--against", help="fork ref to compare with (default: SOURCE's commit)")
    ] = None,
    repo: RepoOption = Path("."),
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
    base: str | None
    try:
        base = find_base(config, None, fork)
    except UsageError:
        base = None  # without a known base every upstream file is compared
    result = run_replay(fork, ref, pristine(config).path, load_series(config.series_dir).patches, base)
    if result.not_in_base:
        shown = ", ".join(result.not_in_base[:3]) + (" ..." if len(result.not_in_base) > 3 else "")
        say(
            f"not compared: {len(result.not_in_base)} upstream files the fork's base {(base or '?')[:12]} never "
            f"had (generated into the release: {shown})"
        )
    for difference in result.differences:
        say(("differs", "red"), f" {difference}")
    verdict = ("identical", "green") if result.identical else ("NOT identical", "red")
    say(
        f"{len(result.differences)} differing files of {result.compared} compared "
        f"(series vs {ref} at {result.tip[:12]}): ",
        verdict,
    )
    if not result.identical:
        raise typer.Exit(1)
