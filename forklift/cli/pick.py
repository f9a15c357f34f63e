"""`forklift pick`: an upstream commit added to the series as a DEP-3 patch, checked before it is written."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from forklift.cli.app import SERIES, app, console, load, say


@app.command(rich_help_panel=SERIES)
def pick(
    rev: Annotated[str, typer.Argument(help="the upstream commit to carry (a hash, tag or branch of --repo)")],
    repo: Annotated[Path, typer.Option("--repo", help="a local git clone of upstream")],
) -> None:
    """Add an upstream commit to the end of the series, limited to the pinned tree (and [series] root)."""
    from forklift.fork.export import recorded_base
    from forklift.fork.pick import pick_commit, upstream_repo, write_pick
    from forklift.source.materialize import pinned_reader

    config = load()
    git = upstream_repo(repo)
    tree, read = pinned_reader(config.data.upstream, config.root, progress=console)
    picked = pick_commit(config, git, rev, tree.path, read)
    for path in picked.dropped:
        say(("dropped", "yellow"), f" {path}: outside the pinned tree or the [series] root")
    where = "at an offset: re-cut at the lines it lands on" if picked.moved else "exactly"
    release = f", upstream in {picked.release}" if picked.release else ""
    say(f"{picked.name}  <- {picked.commit[:12]} {picked.subject}{release}")
    say(f"  applies {where} on {tree.label} with the series")
    for written in write_pick(config, picked):
        say(f"wrote {written}")
    if recorded_base(config.series_dir):
        say(
            ("note", "yellow"),
            f" the series is exported from a fork: cherry-pick {picked.commit[:12]} onto the fork branch too, "
            "or the next export drops it",
        )
    say(
        ("OK", "green"),
        f" check: {len(picked.report.pass1)} patches apply, overlay hash {picked.report.overlay_hash}",
    )
