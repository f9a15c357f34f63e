"""The `forklift flip` command: try the series on a new upstream release and report per patch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from forklift.cli.app import app, console, load

STYLE = {
    "exact": "green",
    "offset": "yellow",
    "fuzz": "red",
    "already-upstream": "cyan",
    "partly-upstream": "magenta",
    "retire-candidate": "cyan",
    "upstream-own": "red",
    "file-gone": "red",
    "blocked": "red",
    "conflict": "red",
    "skipped": "dim",
}


def render(report) -> None:
    """The verdict table; patch names are never cut: a terminal wraps them, piped output widens the table."""
    from rich.table import Table

    table = Table(title=f"forklift flip — {report.old} → {report.new}", title_justify="left")
    verdicts = [p.verdict_text() for p in report.patches]
    names = max((len(p.name) for p in report.patches), default=0)
    piped = not console.is_terminal  # a log or a pipe has no width to respect: widen so no name is folded
    if piped:
        console.width = max(console.width, names + max(map(len, verdicts), default=0) + 80)
    table.add_column("#")
    table.add_column("patch", overflow="fold", min_width=names if piped else None)
    table.add_column("verdict", overflow="fold", min_width=max(map(len, verdicts), default=0) if piped else None)
    table.add_column("needs a look", overflow="fold")
    table.add_column("detail", overflow="fold")
    for number, (p, verdict) in enumerate(zip(report.patches, verdicts), 1):
        table.add_row(str(number), p.name, f"[{STYLE[p.verdict]}]{verdict}[/]", "; ".join(p.look), p.detail())
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
    report_file: Optional[Path] = typer.Option(None, "--report", help="also write the markdown flip report here"),
    receipts: Optional[Path] = typer.Option(
        None, "--receipts", help="receipt folder (default: receipts/ beside forklift.toml)"
    ),
    repo: Optional[Path] = typer.Option(
        None, "--repo", help="with --write: the fork, which gets the new release's commit the series' base line names"
    ),
) -> None:
    """Dry run by default: which patches apply, moved, are upstream (retire), conflict; knobs before/after."""
    from forklift.flip.report import render_markdown
    from forklift.flip.run import run_flip
    from forklift.fork.git import Git
    from forklift.fsio import write_atomic

    fork = Git(repo) if repo is not None else None
    result = run_flip(load(), version, receipts, progress=None if as_json else console, write=write, fork=fork)
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
