"""Commands of the series stage: check (the CI gate), patches-md and tree (the patched tree, out)."""

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
    "fails": "red",
    "already-applied": "red",
    "partly-applied": "red",
    "file-missing": "red",
    "new": "green",  # overlay files
    "replaces": "yellow",
    "same": "red",
}


def _hunks(row) -> str:
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
    return "; ".join([f"{exact}/{len(row.hunks)} exact"] + parts + row.problems + row.disagreements)


def print_check_report(report, digests: bool = False) -> None:
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
        cells = [str(number), row.name, _status(row.status), _status(alone.status) if alone else "-"]
        cells += [_hunks(row), f"+{added} -{removed}"] + ([row.sha256[:16]] if digests else [])
        table.add_row(*cells)
    for skip in skipped:
        _skipped_row(table, skip, digests)
    for file in report.overlay_files:
        cells = ["", f"overlay: {file.path}", _status(file.status), "-", "whole file", f"+{file.added} -{file.removed}"]
        table.add_row(*cells, *([file.sha256[:16]] if digests else []))
    console.print(table)
    for note in report.notes:
        console.print(f"[yellow]note[/] {note}", soft_wrap=True)
    for finding in report.findings:
        console.print(f"[red]FAIL[/] {finding.check}: {finding.subject}: {finding.message}", soft_wrap=True)
    touched = ", ".join(f"{f.path} (+{f.added} -{f.removed})" for f in report.touched)
    console.print(f"files touched: {touched or 'none'}", soft_wrap=True)
    console.print(f"overlay hash: {report.overlay_hash or 'none (nothing changed)'}", soft_wrap=True)


def _skipped_row(table, skip, digests: bool) -> None:
    cells = ["-", skip.name, "[dim]skipped[/]", "-", f"skipped: {skip.reason}", ""]
    table.add_row(*cells, *([skip.sha256[:16]] if digests else []))


def _status(status: str) -> str:
    return f"[{STYLE.get(status, 'red')}]{status}[/]"


@app.command()
def check(
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON instead of a table"),
    digests: bool = typer.Option(False, "--digests", help="show each patch file's sha256 in the table"),
    junit: Optional[Path] = typer.Option(None, "--junit", help="also write a JUnit XML file for CI"),
    receipts: Optional[Path] = typer.Option(
        None, "--receipts", help="receipt folder (default: receipts/ beside forklift.toml)"
    ),
    verify_cache: bool = typer.Option(
        False, "--verify-cache", help="re-hash the cached pristine tree before trusting it (on when CI=true)"
    ),
) -> None:
    """Apply the series to the pristine pin at fuzz 0 and check everything; exit 1 if anything fails."""
    from forklift.series.gate import run_check

    if verify_cache:
        import os

        os.environ["FORKLIFT_VERIFY_CACHE"] = "1"  # read where the cache is opened, below the CLI

    result = run_check(load(), receipts, progress=None if as_json else console)
    report = result.report
    if junit:
        from forklift.fsio import write_atomic
        from forklift.series.junit import junit_xml

        write_atomic(junit, junit_xml(report))
    if as_json:
        console.print_json(json.dumps({"ok": report.ok, "receipt": str(result.receipt), **report.model_dump()}))
    else:
        print_check_report(report, digests=digests)
        verdict = "[green]OK[/]" if report.ok else f"[red]FAILED[/] ({len(report.findings)} finding(s))"
        console.print(f"{verdict} — receipt {result.receipt}", soft_wrap=True)
    if not report.ok:
        raise typer.Exit(1)


@app.command("patches-md")
def patches_md_command() -> None:
    """Regenerate PATCHES.md from the patch headers."""
    from forklift.series.gate import write_patches_md

    console.print(f"wrote {write_patches_md(load())}")


@app.command()
def tree(
    out: Path = typer.Argument(..., help="folder to write the patched tree to (must be empty or absent)"),
    force: bool = typer.Option(False, "--force", help="replace a non-empty OUT"),
) -> None:
    """Write the pinned tree with the series and the overlay applied to OUT, with FORKLIFT-TREE.json."""
    from forklift.series.gate import run_tree

    written, record = run_tree(load(), out, force=force, progress=console)
    console.print(
        f"wrote {written}: {record['upstream']} + {len(record['patches'])} patches"
        f" + {len(record['overlay_files'])} overlay files (overlay hash {record['overlay_hash'] or 'none'})",
        soft_wrap=True,
    )
