"""`forklift watch`: a newer upstream release than the pin, flipped onto (dry run), with a pull-request body."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from forklift.cli.app import FLIP, JsonOption, ReceiptsOption, app, console, load, print_json, receipts_dir, say


@app.command(rich_help_panel=FLIP)
def watch(
    out: Annotated[
        Path, typer.Option("--out", help="where the flip report and pull-request.md go when a release is newer")
    ] = Path("forklift-watch"),
    as_json: JsonOption = False,
    receipts: ReceiptsOption = None,
) -> None:
    """The newest release on the index (pip's) or tag of the git upstream, against the pin; when newer, flip onto
    it (a dry run) and write the report and a pull-request body.

    Exit 0: the pin is the newest. 10: newer, and the series moves (open the pull request). 11: newer, but a patch
    does not apply (re-cut first). 75: the index or repository did not answer (try later). 1, 2: forklift's errors."""
    from forklift.errors import UnreachableError
    from forklift.flip.watch import UNREACHABLE, WATCH_EXIT, run_watch

    try:
        result = run_watch(load(), out, receipts_dir(receipts), progress=None if as_json else console)
    except UnreachableError as exc:
        say(("error:", "bold red"), f" {exc}", err=True)
        raise typer.Exit(UNREACHABLE) from None
    code = result.exit_code
    if as_json:
        flip = result.flip
        print_json(
            {
                "pinned": result.pinned,
                "newest": result.newest,
                "read": result.where,
                "exit": code,
                "verdict": WATCH_EXIT[code],
                "receipt": str(flip.receipt) if flip else None,
                "written": [str(p) for p in result.written],
            }
        )
    else:
        say(f"pinned {result.pinned}; newest {result.newest} ({result.where})")
        if result.flip is not None:
            say(f"flip: {result.flip.report.summary()} — receipt {result.flip.receipt}")
        for path in result.written:
            say(f"wrote {path}")
        say(WATCH_EXIT[code])
    raise typer.Exit(code)
