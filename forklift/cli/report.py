"""`forklift report`: a campaign's receipts as one markdown report plus PNG plots."""

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
