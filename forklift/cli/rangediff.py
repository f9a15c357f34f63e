"""`forklift range-diff OLD NEW`: two versions of the series, patch by patch, as git range-diff shows them."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from forklift.cli.app import SERIES, app, console, load, say


@app.command("range-diff", rich_help_panel=SERIES)
def range_diff_command(
    old: Annotated[str, typer.Argument(help="a distribution folder, a series folder, or a git revision of this one")],
    new: Annotated[str, typer.Argument(help="the same kinds: the series to compare OLD with")],
) -> None:
    """Pair the patches of two series and show each one's interdiff (git range-diff over them as commits)."""
    from forklift.fork.rangediff import range_diff, side

    config = load()
    with tempfile.TemporaryDirectory(prefix="forklift-range-diff-") as scratch:
        before = side(config, old, Path(scratch), progress=console)
        after = side(config, new, Path(scratch), progress=console)
        result = range_diff(before, after, Path(scratch))
    console.out(result.text, end="", highlight=False)
    say(f"{result.summary()} ({before.label} -> {after.label})")
