"""Commands of the stats and report stages: compare, report."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from forklift.cli.app import app, console
from forklift.errors import ForkliftError, UsageError

CLAIM_STYLE = {
    "better": "green",
    "worse": "red",
    "different": "yellow",
    "noise": "dim",
    "unclaimable": "yellow",
    "insufficient": "dim",
}


def _side(path: Path):
    from forklift.receipts import read_receipts
    from forklift.stats import bench_runs

    runs = bench_runs(read_receipts([path]))
    if not runs:
        raise ForkliftError(f"{path}: no bench receipts")
    return runs


def _render(comparison) -> None:
    from rich.table import Table

    from forklift.report import format as fmt

    a, b = f"{comparison.label_a} on {comparison.host_a}", f"{comparison.label_b} on {comparison.host_b}"
    table = Table(title=f"{fmt.setting(comparison)} · {comparison.workload}   A = {a}   B = {b}", title_justify="left")
    for column in ("cell", "metric", "A", "B", "Δ", "95% CI", "MDE", "verdict"):
        table.add_column(column, justify="right" if column in ("A", "B", "Δ", "95% CI", "MDE") else "left")
    for cell in comparison.cells:
        for i, result in enumerate(cell.metrics):
            table.add_row(
                cell.cell if i == 0 else "",
                *fmt.metric_cells(result),
                f"[{CLAIM_STYLE[result.claim]}]{result.verdict}[/]",
            )
        table.add_section()
    console.print(table)
    for cell in comparison.cells:
        console.print(f"[bold]{cell.cell}[/]\n" + "\n".join(f"  {line}" for line in fmt.cell_notes(cell)))
    for name in comparison.only_a + comparison.only_b:
        side = "A" if name in comparison.only_a else "B"
        console.print(f"[yellow]cell {name} measured by {side} only: not compared[/]")
    for partial in comparison.partial:
        console.print(f"[yellow]not a whole receipt: {partial}[/]")
    if comparison.across_machines:
        console.print("[yellow]across machines: A and B ran on different boxes; this row is not a same-box A/B[/]")
    console.print(
        "MDE: the smallest change this cohort detects 80% of the time (two-sided 5% test); "
        "Δ and CI are geometric means of per-prompt B/A ratios.\n"
    )


@app.command("compare")
def compare_command(
    receipts: list[Path] = typer.Argument(
        ..., help="Receipt files or folders: the first is A (the baseline); every other is compared with it."
    ),
    across_machines: bool = typer.Option(
        False, "--across-machines", help="Allow boxes to differ; each box stays its own row, never averaged."
    ),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed (results are reproducible for a given seed)."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON instead of tables."),
    aa: list[Path] = typer.Option(
        [],
        "--aa",
        help="A/A control: receipts (files or folders, repeatable) of one build benched 2+ times on A's box; "
        "their bench-to-bench spread floors every interval.",
    ),
) -> None:
    """Paired per-prompt A/B of bench receipts: deltas, 95% intervals, verdicts, divergence, MDE."""
    from forklift.stats import compare_groups, match

    if len(receipts) < 2:
        raise UsageError(f"compare needs at least two receipts or folders (A B ...), got {len(receipts)}")
    from forklift.cli.quality import compare_suite_receipts  # quality and canary receipts: their own module

    if compare_suite_receipts(receipts, across_machines=across_machines, seed=seed, as_json=as_json):
        return
    baseline = _side(receipts[0])
    aa_runs = [run for path in aa for run in _side(path)]
    results, unmatched = [], []
    for other in receipts[1:]:
        matching = match(baseline, _side(other), across_machines=across_machines)
        results += [
            compare_groups(a, b, across_machines=across_machines, seed=seed, aa_runs=aa_runs or None)
            for a, b in matching.pairs
        ]
        unmatched += [f"A only: {name}" for name in matching.only_a] + [f"{other} only: {n}" for n in matching.only_b]
    if as_json:
        typer.echo(
            json.dumps({"comparisons": [r.model_dump(mode="json") for r in results], "unmatched": unmatched}, indent=2)
        )
        return
    for result in results:
        _render(result)
    for line in unmatched:
        console.print(f"[yellow]not compared ({line})[/]")


@app.command("report")
def report_command(
    folder: Path = typer.Argument(..., help="A folder of receipts (a campaign); searched recursively."),
    output: Path = typer.Option(None, "--output", "-o", help="Markdown file to write (default: FOLDER/report.md)."),
    baseline: str = typer.Option(
        None, "--baseline", help="Build (e.g. 0.32.0) or setting to compare against (default: the oldest build)."
    ),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed (results are reproducible for a given seed)."),
) -> None:
    """Render a campaign's receipts into one markdown report plus PNG plots."""
    from forklift.report import render_report

    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder of receipts")
    campaign, files = render_report(folder, output or folder / "report.md", baseline=baseline, seed=seed)
    console.print(f"{len(campaign.rows)} rows from {len(campaign.receipts)} receipts; wrote:")
    for path in files:
        console.print(f"  {path}")
