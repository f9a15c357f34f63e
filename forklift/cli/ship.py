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
    say(
        f"wrote {out / built.filename}: {built.version} ({len(built.stamp.patches)} patches, overlay {built.stamp.overlay_hash})"
    )


@app.command(rich_help_panel=SERIES)
def image(
    print_: Annotated[bool, typer.Option("--print", help="print the Containerfile on stdout")] = False,
    base: Annotated[
        str | None, typer.Option("--from", help="the FROM image (default: [image] base, else the engine's own)")
    ] = None,
) -> None:
    """Print a Containerfile: the upstream serving image, the patched wheel installed over it, forklift's labels."""
    import sys

    from forklift.errors import UsageError
    from forklift.ship.containerfile import base_image, containerfile
    from forklift.ship.wheel import plan_wheel

    if not print_:
        raise UsageError("forklift builds no image itself: `forklift image --print > Containerfile`, then podman build")
    config = load()
    plan = plan_wheel(config)
    sys.stdout.write(containerfile(config, plan, base_image(config, plan, base)))
