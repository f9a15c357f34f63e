"""The `forklift flip` command: try the series on a new upstream release and report per patch."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from forklift.cli.app import FLIP, JsonOption, ReceiptsOption, app, console, load, print_json, receipts_dir, say, styled

STYLE = {
    "applies": "green",
    "offset": "yellow",
    "already-upstream": "cyan",
    "partly-upstream": "magenta",
    "conflicts": "red",
    "file-gone": "red",
}


def render(report) -> None:
    from rich.table import Table

    from forklift.flip.report import VERDICT_TEXT

    table = Table(title=f"forklift flip — {report.old} → {report.new}", title_justify="left")
    for column in ("#", "patch", "verdict", "needs a look", "detail"):
        table.add_column(column)
    for number, p in enumerate(report.patches, 1):
        look = "upstream changed " + ", ".join(p.upstream_changed) if p.needs_look else ""
        table.add_row(str(number), p.name, styled(VERDICT_TEXT[p.verdict], STYLE[p.verdict]), look, p.detail())
    console.print(table)
    if report.knobs_skipped:
        say(f"knobs: {report.knobs_skipped}")
    for k in report.knobs:
        say("knobs " + k.describe(report.knobs[0] if k is not report.knobs[0] else None))
    if report.knobs:
        for read in report.knobs[0].new_unregistered_reads:
            say(f"  unregistered read new in {report.new}: {read}")
        for read in report.knobs[-1].series_unregistered_reads:
            say(f"  unregistered read added by the series: {read}")
    say(report.summary())


@app.command(rich_help_panel=FLIP)
def flip(
    version: Annotated[str, typer.Argument(help="the upstream version (PyPI) or tag (git) to move to")],
    write: Annotated[
        bool, typer.Option("--write", help="move the pin and the series (only when nothing conflicts)")
    ] = False,
    as_json: JsonOption = False,
    report_file: Annotated[
        Path | None, typer.Option("--report", help="also write the markdown flip report here")
    ] = None,
    receipts: ReceiptsOption = None,
) -> None:
    """Dry run by default: which patches apply, moved, are upstream (retire), conflict; knobs before/after."""
    from forklift.flip.report import render_markdown
    from forklift.flip.run import run_flip
    from forklift.fsio import write_atomic

    result = run_flip(load(), version, receipts_dir(receipts), progress=None if as_json else console, write=write)
    report = result.report
    if report_file:
        write_atomic(report_file, render_markdown(report))
    if as_json:
        print_json(
            {
                "ok": not report.blocked,
                "receipt": str(result.receipt),
                "written": [str(p) for p in result.written],
                **report.model_dump(mode="json"),
            }
        )
    else:
        render(report)
        for path in result.written:
            say(f"wrote {path}")
        verdict = ("can move", "green") if not report.blocked else ("BLOCKED", "red")
        blocked = f" ({len(report.blocked)} patch(es))" if report.blocked else ""
        nothing = ": nothing written" if write and report.blocked else ""
        say(verdict, f"{blocked}{nothing} — receipt {result.receipt}")
    if report.blocked:
        raise typer.Exit(1)
