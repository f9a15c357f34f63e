"""`forklift tree`: the pinned tree with the series and the overlay applied, written out."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from forklift.cli.app import SERIES, app, console, load, say


@app.command(rich_help_panel=SERIES)
def tree(
    out: Annotated[Path, typer.Argument(help="folder to write the patched tree to (must be empty or absent)")],
    force: Annotated[bool, typer.Option("--force", help="replace a non-empty OUT")] = False,
) -> None:
    """Write the pinned tree with the series and the overlay applied to OUT, with FORKLIFT-TREE.json."""
    from forklift.series.gate import run_tree

    written, record = run_tree(load(), out, force=force, progress=console)
    say(
        f"wrote {written}: {record['upstream']} + {len(record['patches'])} patches"
        f" + {len(record['overlay_files'])} overlay files (overlay hash {record['overlay_hash'] or 'none'})"
    )
