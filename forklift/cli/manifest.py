"""`forklift manifest`: the lost-work manifest (files the series must keep changing)."""

from __future__ import annotations

from typing import Annotated

import typer

from forklift.cli.app import SERIES, app, console, load, say


@app.command(rich_help_panel=SERIES)
def manifest(
    write: Annotated[bool, typer.Option("--write", help="(re)write patches/MANIFEST.toml from today's series")] = False,
) -> None:
    """Check the lost-work manifest against the series, or write one requiring every file it changes today."""
    from forklift.fsio import tree_reader
    from forklift.series.gate import configured_overlay, configured_series
    from forklift.series.manifest import MANIFEST_FILE, changed_paths, check_manifest, load_manifest, write_manifest

    config = load()
    if not write and load_manifest(config.series_dir) is None:  # nothing required is not "everything kept"
        say(
            ("no manifest", "red"),
            f" {config.series_dir / MANIFEST_FILE} does not exist: nothing is checked "
            "(write one with `forklift manifest --write`)",
        )
        raise typer.Exit(1)
    series = configured_series(config)
    from forklift.source.materialize import pinned_tree

    changed = changed_paths(tree_reader(pinned_tree(config, progress=console).path), series, configured_overlay(config))
    if write:
        say(f"wrote {write_manifest(config.series_dir, changed)}: {len(changed)} files")
        return
    lost = check_manifest(config.series_dir, series.patches, changed)
    for item in lost:
        say(("lost work", "red"), f" {item.message}")
    if lost:
        raise typer.Exit(1)
    say(("OK", "green"), " the series carries everything the manifest requires")
