"""`forklift compare`: paired per-prompt A/B of bench receipts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from forklift.cli.app import MEASURE, JsonOption, app, console, print_json, say, styled
from forklift.errors import ForkliftError, UsageError
from forklift.textsafe import terminal

if TYPE_CHECKING:
    from forklift.stats import BenchRun, GroupComparison
    from forklift.stats.quality import SuiteComparison

CLAIM_STYLE = {
    "faster": "green",
    "slower": "red",
    "different": "yellow",
    "no practical change": "cyan",
    "within noise": "dim",
    "undecided": "yellow",
    "not claimable": "yellow",
}

SeedOption = Annotated[int, typer.Option("--seed", help="Bootstrap seed (results are reproducible for a given seed).")]
MarginOption = Annotated[
    list[str] | None,
    typer.Option(
        "--margin",
        help="Practical margin, METRIC=P in percent (tpot=2%), or P for every metric; repeatable. Default 1%.",
    ),
]
TargetOption = Annotated[
    float | None,
    typer.Option("--target-mde", help="Say whether this design reaches an MDE of P percent, and the units it needs."),
]


def _read(path: Path) -> tuple[list[BenchRun], bool]:
    """A side's bench runs (records streamed), and whether it holds quality or canary receipts: each file is read once."""
    from forklift.stats.sample import read_bench_runs

    runs, found = read_bench_runs([path])
    return runs, any(receipt.kind in ("quality", "canary") for _, receipt in found)


def _bench(path: Path, runs: list[BenchRun]) -> list[BenchRun]:
    if not runs:
        raise ForkliftError(f"{path}: no bench receipts")
    return runs


def _render(comparison: GroupComparison, target: float | None) -> None:
    from rich.table import Table

    from forklift.report import numbers

    # one line each: a newline in a receipt's hostname or label is shown as \n, not as a line of its own
    a, b = f"{comparison.label_a} on {comparison.host_a}", f"{comparison.label_b} on {comparison.host_b}"
    title = terminal(f"{numbers.setting(comparison)} · {comparison.workload}   A = {a}   B = {b}")
    table = Table(title=title, title_justify="left")
    for column in ("cell", "metric", "A", "B", "Δ", "95% CI", "MDE", "verdict"):
        table.add_column(column, justify="right" if column in ("A", "B", "Δ", "95% CI", "MDE") else "left")
    for cell in comparison.cells:
        for i, result in enumerate(cell.metrics):
            table.add_row(
                terminal(cell.cell) if i == 0 else "",
                *numbers.metric_cells(result),
                Text(result.verdict, style=CLAIM_STYLE[result.claim]),
            )
        table.add_section()
    console.print(table)
    for cell in comparison.cells:
        notes = numbers.cell_notes(cell) + (numbers.target_notes(cell, target) if target is not None else [])
        say((terminal(cell.cell), "bold"), "\n" + "\n".join(f"  {terminal(line)}" for line in notes))
    for name in comparison.only_a + comparison.only_b:
        side = "A" if name in comparison.only_a else "B"
        say((terminal(f"cell {name} measured by {side} only: not compared"), "yellow"))
    for partial in comparison.partial:
        say((terminal(f"not a whole receipt: {partial}"), "yellow"))
    if comparison.across_machines:
        say(("across machines: A and B ran on different boxes; this row is not a same-box A/B", "yellow"))
    say(
        "MDE: the smallest change this design detects 80% of the time (two-sided 5% test); "
        "Δ: B over A as a ratio of geometric means over the units (boots, or runs of one boot); "
        "a verdict is 'no practical change' when the whole 95% CI lies inside ±margin.\n"
    )


@app.command("compare", rich_help_panel=MEASURE)
def compare_command(
    receipts: Annotated[
        list[Path],
        typer.Argument(
            help="Receipt files or folders: the first is A (the baseline); every other is compared with it."
        ),
    ],
    across_machines: Annotated[
        bool,
        typer.Option("--across-machines", help="Allow boxes to differ; each box stays its own row, never averaged."),
    ] = False,
    seed: SeedOption = 0,
    as_json: JsonOption = False,
    aa: Annotated[
        list[Path] | None,
        typer.Option(
            "--aa",
            help="A/A control: receipts (files or folders, repeatable) of one build benched 2+ times on A's box; "
            "their bench-to-bench spread floors every interval.",
        ),
    ] = None,
    margin: MarginOption = None,
    target_mde: TargetOption = None,
) -> None:
    """A/B of bench receipts over the right unit (boots, or runs of one boot): Δ, 95% CI, MDE, verdict vs margin."""
    from forklift.stats import Margins, compare_groups, margins, match, parse_margin

    if len(receipts) < 2:
        raise UsageError(f"compare needs at least two receipts or folders (A B ...), got {len(receipts)}")
    for path in [*receipts, *(aa or [])]:
        if not path.exists():
            raise UsageError(f"{path}: no such receipt file or folder")
    if target_mde is not None and not 0 < target_mde < 100:
        raise UsageError(f"--target-mde {target_mde}: give P in percent, between 0 and 100")
    per_metric = Margins(margins(dict(parse_margin(text) for text in margin or [])))
    sides = [_read(path) for path in receipts]
    if sides[0][1] and _compare_suites(receipts, across_machines=across_machines, as_json=as_json):
        return
    baseline = _bench(receipts[0], sides[0][0])
    aa_runs = [run for path in aa or [] for run in _bench(path, _read(path)[0])]
    results, unmatched = [], []
    for other, (runs, _) in zip(receipts[1:], sides[1:], strict=True):
        matching = match(baseline, _bench(other, runs), across_machines=across_machines)
        results += [
            compare_groups(
                a, b, across_machines=across_machines, seed=seed, aa_runs=aa_runs or None, margins=per_metric
            )
            for a, b in matching.pairs
        ]
        unmatched += [f"A only: {name}" for name in matching.only_a] + [f"{other} only: {n}" for n in matching.only_b]
    if as_json:
        print_json({"comparisons": [r.model_dump(mode="json") for r in results], "unmatched": unmatched})
        return
    for result in results:
        _render(result, None if target_mde is None else target_mde / 100)
    for line in unmatched:
        say((f"not compared ({line})", "yellow"))


def _compare_suites(paths: list[Path], *, across_machines: bool, as_json: bool) -> bool:
    """`forklift compare` for quality and canary receipts; True when nothing is left for the bench comparison.

    With bench receipts too, the suites' table comes first and bench compares after it
    (with --json, bench's document alone, as before).
    """
    from forklift.stats.quality import compare_suite_folders

    found = compare_suite_folders(paths, across_machines=across_machines)
    if found is None or (found.has_bench and as_json):
        return False
    if not found.rows:
        if found.has_bench:
            return False
        raise ForkliftError("nothing to compare: " + "; ".join(found.unmatched))
    if as_json:
        print_json({"suites": [r.model_dump(mode="json") for r in found.rows], "unmatched": found.unmatched})
    else:
        _render_suites(found.rows, found.unmatched)
    refused = [row for row in found.rows if row.claim == "refused"]
    if refused:
        raise ForkliftError(refused[0].verdict)
    return not found.has_bench


def _render_suites(rows: list[SuiteComparison], alone: list[str]) -> None:
    from rich.table import Table

    style = {
        "better": "green",
        "worse": "red",
        "noise": "dim",
        "identical": "dim",
        "failed": "red",
        "refused": "yellow",
        "insufficient": "yellow",
    }
    table = Table(title="forklift compare: quality and canaries", title_justify="left")
    for column in ("suite", "setting", "A", "B", "verdict"):
        table.add_column(column)
    for row in rows:
        setting = row.setting_a if row.setting_a == row.setting_b else f"{row.setting_a} → {row.setting_b}"
        table.add_row(row.label, setting, row.value_a, row.value_b, styled(row.verdict, style[row.claim]))
    console.print(table)
    for line in alone:
        say((f"not compared ({line})", "yellow"))
