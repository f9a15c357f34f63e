"""The `forklift flip` command: try the series on a new upstream release and report per patch."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from forklift.cli.app import app, console, load

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
        table.add_row(str(number), p.name, f"[{STYLE[p.verdict]}]{VERDICT_TEXT[p.verdict]}[/]", look, p.detail())
    console.print(table)
    if report.knobs_skipped:
        console.print(f"knobs: {report.knobs_skipped}")
    for k in report.knobs:
        console.print("knobs " + k.describe(report.knobs[0] if k is not report.knobs[0] else None))
    if report.knobs:
        for read in report.knobs[0].new_unregistered_reads:
            console.print(f"  unregistered read new in {report.new}: {read}")
        for read in report.knobs[-1].series_unregistered_reads:
            console.print(f"  unregistered read added by the series: {read}")
    console.print(report.summary())


@app.command()
def flip(
    version: str = typer.Argument(..., help="the upstream version (PyPI) or tag (git) to move to"),
    write: bool = typer.Option(False, "--write", help="move the pin and the series (only when nothing conflicts)"),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON instead of a table"),
    report_file: Path | None = typer.Option(None, "--report", help="also write the markdown flip report here"),
    receipts: Path | None = typer.Option(
        None, "--receipts", help="receipt folder (default: receipts/ beside forklift.toml)"
    ),
) -> None:
    """Dry run by default: which patches apply, moved, are upstream (retire), conflict; knobs before/after."""
    from forklift.flip.report import render_markdown
    from forklift.flip.run import run_flip
    from forklift.fsio import write_atomic

    result = run_flip(load(), version, receipts, progress=None if as_json else console, write=write)
    report = result.report
    if report_file:
        write_atomic(report_file, render_markdown(report))
    if as_json:
        console.print_json(
            json.dumps(
                {
                    "ok": not report.blocked,
                    "receipt": str(result.receipt),
                    "written": [str(p) for p in result.written],
                    **report.model_dump(),
                }
            )
        )
    else:
        render(report)
        for path in result.written:
            console.print(f"wrote {path}")
        verdict = "[green]can move[/]" if not report.blocked else f"[red]BLOCKED[/] ({len(report.blocked)} patch(es))"
        if write and report.blocked:
            verdict += ": nothing written"
        console.print(f"{verdict} — receipt {result.receipt}")
    if report.blocked:
        raise typer.Exit(1)
