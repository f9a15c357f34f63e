"""The forklift command line: parse arguments, call plain functions, render.

Each stage registers its commands from its own module below; the logic lives
in the stage packages, never here.
"""

from __future__ import annotations

import sys

from forklift.cli import bench as _bench  # noqa: F401
from forklift.cli import compare as _compare  # noqa: F401
from forklift.cli import flip as _flip  # noqa: F401
from forklift.cli import fork as _fork  # noqa: F401
from forklift.cli import installed as _installed  # noqa: F401
from forklift.cli import knobs as _knobs  # noqa: F401
from forklift.cli import launch as _launch  # noqa: F401

# Command modules register themselves on `app` when imported.
from forklift.cli import series as _series  # noqa: F401
from forklift.cli import source as _source  # noqa: F401
from forklift.cli.app import app, err_console
from forklift.errors import ForkliftError


def main() -> None:
    """Entry point: one line on stderr and the error's exit code for every forklift failure.

    typer (click) handles its own usage errors (exit 2); forklift's errors pass through it.
    """
    try:
        app()
    except ForkliftError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", markup=True, highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
