"""The forklift command line: parse arguments, call plain functions, render.

One module per command or command group, named after it; each registers itself on `app` when
imported (forklift.cli.app.COMMAND_MODULES: a run imports only its command's module). The logic lives
in the stage packages, never here.
"""

from __future__ import annotations

import os
import sys

__all__ = ["main"]

# What survives a Ctrl-C, by command: each is true because the stage writes atomically (receipts, cache
# entries, refs) or cleans up on the way out (an engine and its children are stopped).
KEPT_ON_INTERRUPT = {
    "fetch": "finished downloads and trees stay in the cache; the half-made one was discarded",
    "init": "forklift.toml is written only once the pin is resolved: none was written",
    "check": "finished trees stay in the cache; no receipt was written",
    "launch": "the engine and its children were stopped; the boot receipt is marked interrupted",
    "bench": "every completed request is in the receipt marked interrupted",
    "quality": "the engine was stopped; each finished suite's receipt is kept, the cut one's is marked interrupted",
    "canary": "the engine was stopped; each finished suite's receipt is kept, the cut one's is marked interrupted",
    "flip": "forklift.toml and the series are unchanged; no receipt was written",
    "import": "the fork's branches are unchanged; a fork the import had started was removed",
    "export": "patches/series, the patches, forklift.toml and PATCHES.md are unchanged",
    "rebase": "the fork's branch is unchanged (a new release's commit and tag may stay: a later rebase reuses them)",
}
DEFAULT_KEPT = "receipts and the cache are written atomically: nothing half-made was kept"


def main() -> None:
    """Entry point: one line on stderr and the error's exit code for every forklift failure.

    typer (click) handles its own usage errors (exit 2); forklift's errors pass through it.
    Ctrl-C is one line saying what stopped and what was kept, and exit 130 (128 + SIGINT), as shells expect.
    The message is printed as written: a path holding `[red]` is not taken for markup.
    """
    completing = any(key.endswith("_COMPLETE") for key in os.environ)  # completion reads every command
    if not completing and _command(sys.argv[1:]) == "check":
        from forklift.cli.checkcache import replay_or_record

        replay_or_record(sys.argv[1:])  # before typer is imported: a replay needs neither it, rich nor pydantic
    from forklift.cli.app import app, say
    from forklift.errors import ForkliftError, Interrupted
    from forklift.fsio import place_error

    if not completing:
        app.only = _command(sys.argv[1:])
    try:
        app()
    except ForkliftError as exc:
        say(("interrupted:" if isinstance(exc, Interrupted) else "error:", "bold red"), f" {exc}", err=True)
        sys.exit(exc.exit_code)
    except OSError as exc:  # a place that refuses a write (read-only, full, a file in the way): one line naming it
        if (refused := place_error(exc)) is None:
            raise
        say(("error:", "bold red"), f" {refused}", err=True)
        sys.exit(refused.exit_code)
    except SystemExit as exc:
        # typer turns KeyboardInterrupt into a silent exit 130; say what stopped and what was kept
        if exc.code == 130 and isinstance(getattr(exc.__context__, "__cause__", None), KeyboardInterrupt):
            command = _command(sys.argv[1:])
            kept = KEPT_ON_INTERRUPT.get(command, DEFAULT_KEPT)
            say(f"interrupted: forklift {command} stopped by Ctrl-C; {kept}", err=True)
        raise


def _command(argv: list[str]) -> str:
    """The command word of `argv` (global options such as --config PATH skipped)."""
    words = iter(argv)
    for word in words:
        if word in ("--config", "-c", "--width"):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return ""
