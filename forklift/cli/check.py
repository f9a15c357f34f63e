"""`forklift check` (the fail-closed CI gate over the series) and `forklift patches-md`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from forklift.cli.app import SERIES, JsonOption, ReceiptsOption, app, console, load, print_json, receipts_dir, say

if TYPE_CHECKING:
    from rich.table import Table

    from forklift.series.check import CheckReport, PatchRow, SkippedRow

STYLE = {
    "exact": "green",
    "offset": "yellow",
    "fuzz": "red",
    "fails": "red",
    "already-applied": "red",
    "partly-applied": "red",
    "file-missing": "red",
    "new": "green",  # overlay files
    "replaces": "yellow",
    "same": "red",
}


def _hunks(row: PatchRow) -> str:
    parts = []
    for h in row.hunks:
        if h.status == "exact":
            continue
        if h.status == "offset":
            parts.append(f"{h.file}#{h.index} offset {h.offset:+d} lines")
        elif h.status == "fuzz":
            parts.append(f"{h.file}#{h.index} needs fuzz {h.fuzz}")
        else:
            parts.append(f"{h.file}#{h.index} {h.status}")
    exact = sum(1 for h in row.hunks if h.status == "exact")
    return "; ".join([f"{exact}/{len(row.hunks)} exact", *parts, *row.problems, *row.disagreements])


def _status(status: str) -> Text:
    return Text(status, style=STYLE.get(status, "red"))


def print_check_report(report: CheckReport, digests: bool = False) -> None:
    from rich.table import Table

    standalone = {row.name: row for row in report.pass2}
    table = Table(title=f"forklift check — {report.tree}", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("patch", overflow="fold")
    table.add_column("pass 1", no_wrap=True)
    table.add_column("pass 2", no_wrap=True)
    table.add_column("hunks", overflow="fold")
    table.add_column("+/-", no_wrap=True)
    if digests:
        table.add_column("sha256", no_wrap=True)
    skipped = sorted(report.skipped, key=lambda s: s.after)
    for number, row in enumerate(report.pass1, 1):
        while skipped and skipped[0].after < number:
            _skipped_row(table, skipped.pop(0), digests)
        added = sum(f.added for f in row.files)
        removed = sum(f.removed for f in row.files)
        alone = standalone.get(row.name)
        cells: list[str | Text] = [str(number), row.name, _status(row.status), _status(alone.status) if alone else "-"]
        cells += [_hunks(row), f"+{added} -{removed}"] + ([row.sha256[:16]] if digests else [])
        table.add_row(*cells)
    for skip in skipped:
        _skipped_row(table, skip, digests)
    for file in report.overlay_files:
        cells = ["", f"overlay: {file.path}", _status(file.status), "-", "whole file", f"+{file.added} -{file.removed}"]
        table.add_row(*cells, *([file.sha256[:16]] if digests else []))
    console.print(table)
    for note in report.notes:
        say(("note", "yellow"), f" {note}")
    for finding in report.findings:
        say(("FAIL", "red"), f" {finding.check}: {finding.subject}: {finding.message}")
    touched = ", ".join(f"{f.path} (+{f.added} -{f.removed})" for f in report.touched)
    say(f"files touched: {touched or 'none'}")
    say(f"overlay hash: {report.overlay_hash or 'none (nothing changed)'}")


def _skipped_row(table: Table, skip: SkippedRow, digests: bool) -> None:
    cells: list[str | Text] = ["-", skip.name, Text("skipped", style="dim"), "-", f"skipped: {skip.reason}", ""]
    table.add_row(*cells, *([skip.sha256[:16]] if digests else []))


@app.command(rich_help_panel=SERIES)
def check(
    as_json: JsonOption = False,
    junit: Annotated[Path | None, typer.Option("--junit", help="also write a JUnit XML file for CI")] = None,
    summary: Annotated[
        Path | None,
        typer.Option("--summary", help="also append the result as markdown here (a CI job summary)"),
    ] = None,
    receipts: ReceiptsOption = None,
    digests: Annotated[bool, typer.Option("--digests", help="show each patch file's sha256 in the table")] = False,
    verify_cache: Annotated[
        bool,
        typer.Option("--verify-cache", help="re-hash the cached pristine tree before trusting it (on when CI=true)"),
    ] = False,
    _fresh: Annotated[  # read before typer runs, by forklift.cli.checkcache
        bool, typer.Option("--fresh", help="apply the series again even when no input changed since the last check")
    ] = False,
) -> None:
    """Apply the series to the pristine pin at fuzz 0 and check everything; exit 1 if anything fails.

    With no input changed since the last check, its result is replayed, with a new receipt."""
    from forklift.cli.checkcache import store_result
    from forklift.series.gate import run_check

    result = run_check(load(), receipts_dir(receipts), progress=None if as_json else console, verify_cache=verify_cache)
    report = result.report
    if junit:
        from forklift.fsio import write_atomic
        from forklift.series.junit import junit_xml

        write_atomic(junit, junit_xml(report))
    if summary:
        from forklift.fsio import append_text
        from forklift.series.summary import check_markdown

        append_text(summary, check_markdown(report))
    if as_json:
        print_json({"ok": report.ok, "receipt": str(result.receipt), **report.model_dump(mode="json")})
    else:
        print_check_report(report, digests=digests)
        verdict = ("OK", "green") if report.ok else ("FAILED", "red")
        found = "" if report.ok else f" ({len(report.findings)} finding(s))"
        say(verdict, f"{found} — receipt {result.receipt}")
    store_result(result, 0 if report.ok else 1)
    if not report.ok:
        raise typer.Exit(1)


@app.command("patches-md", rich_help_panel=SERIES)
def patches_md_command() -> None:
    """Regenerate PATCHES.md from the patch headers."""
    from forklift.series.gate import write_patches_md

    say(f"wrote {write_patches_md(load())}")
