"""The forklift command line: parse arguments, call plain functions, render.

One module per command or command group, named after it; each registers itself on `app` when
imported. The logic lives in the stage packages, never here.
"""

from __future__ import annotations

import importlib
import sys

from forklift.cli.app import app, say
from forklift.errors import ForkliftError

# Imported in pipeline order: within a help panel, commands are listed in this order.
COMMAND_MODULES = (
    "source",
    "check",
    "manifest",
    "tree",
    "fork",
    "flip",
    "launch",
    "knobs",
    "installed",
    "bench",
    "quality",
    "canary",
    "compare",
    "report",
)
for _name in COMMAND_MODULES:
    importlib.import_module(f"forklift.cli.{_name}")


def main() -> None:
    """Entry point: one line on stderr and the error's exit code for every forklift failure.

    typer (click) handles its own usage errors (exit 2); forklift's errors pass through it.
    The message is printed as written: a path holding `[red]` is not taken for markup.
    """
    try:
        app()
    except ForkliftError as exc:
        say(("error:", "bold red"), f" {exc}", err=True)
        sys.exit(exc.exit_code)
