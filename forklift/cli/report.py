"""`forklift report`: a campaign's receipts as one markdown report plus PNG plots; `forklift pack`: receipts kept small."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from forklift.cli.app import MEASURE, app, say
from forklift.cli.compare import SeedOption
from forklift.errors import UsageError


@app.command("report", rich_help_panel=MEASURE)
def report_command(
    folder: Annotated[Path, typer.Argument(help="A folder of receipts (a campaign); searched recursively.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Markdown file to write (default: FOLDER/report.md).")
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline", help="Build (e.g. 0.32.0) or setting to compare against (default: the oldest build)."
        ),
    ] = None,
    seed: SeedOption = 0,
) -> None:
    """Render a campaign's receipts into one markdown report plus PNG plots."""
    from forklift.report import render_report

    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder of receipts")
    campaign, files = render_report(folder, output or folder / "report.md", baseline=baseline, seed=seed)
    say(f"{len(campaign.rows)} rows from {len(campaign.receipts)} receipts; wrote:")
    for path in files:
        say(f"  {path}")


@app.command("pack", rich_help_panel=MEASURE)
def pack_command(
    paths: Annotated[list[Path], typer.Argument(help="Receipt files, or folders of them (searched recursively).")],
) -> None:
    """Pack finished receipts to keep or commit them: each NAME.json becomes NAME.json.gz (gzip, request chunk
    times in exact columns), checked to read back as the same receipt before the .json is removed. Every
    command reads packed receipts as it reads the others."""
    from forklift.receipts.packed import is_packed, pack_receipt
    from forklift.receipts.store import receipt_paths

    before = after = count = 0
    for path in receipt_paths(paths):
        if is_packed(path):
            continue
        size = path.stat().st_size
        packed = pack_receipt(path)
        before, after, count = before + size, after + packed.stat().st_size, count + 1
    say(f"packed {count} receipts: {before / 1e6:,.2f} MB -> {after / 1e6:,.2f} MB")
