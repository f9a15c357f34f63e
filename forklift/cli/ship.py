"""`forklift wheel` and `forklift image`: the artifacts a distribution ships, named by the overlay they carry."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from forklift.cli.app import SERIES, app, console, load, say


@app.command(rich_help_panel=SERIES)
def wheel(
    out: Annotated[Path, typer.Argument(help="folder to write the patched wheel to")],
) -> None:
    """Write the pinned upstream wheel with the series applied, versioned VERSION+forklift.<overlay hash>."""
    from forklift.ship.wheel import build_wheel

    built = build_wheel(load(), out, progress=console)
    say(f"wrote {built.path}: {built.version} ({len(built.stamp.patches)} patches, overlay {built.stamp.overlay_hash})")
