"""`forklift ladder PROFILE --axis KEY=...`: boot each value, burst it, stop; print where it stops booting."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from forklift.cli.app import MEASURE, app, console, load

if TYPE_CHECKING:
    from rich.table import Table

    from forklift.ladder.schema import LadderBody, LadderCell


def ladder_table(body: LadderBody) -> Table:
    """The ladder as a rich table (report/ladder.py renders the same rows as markdown)."""
    from rich.table import Table

    from forklift.report.ladder import ladder_rows

    header, rows = ladder_rows(body)
    table = Table(title=f"forklift ladder: {body.setting}, {body.key}", title_justify="left")
    for name in header:
        table.add_column(name)
    for row in rows:
        table.add_row(*row)
    return table


@app.command(rich_help_panel=MEASURE)
def ladder(
    profile: Annotated[str, typer.Argument(help="a [profiles.NAME] of forklift.toml")],
    axis: Annotated[str, typer.Option("--axis", help="KEY=V1,V2,... or KEY=START:STOP:STEP (a flag or an env knob)")],
    sets: Annotated[
        list[str] | None, typer.Option("--set", help="fixed for every cell: axis=choice, args.FLAG=V, env.NAME=V")
    ] = None,
    requests: Annotated[int, typer.Option("--requests", help="burst: requests per cell")] = 16,
    concurrency: Annotated[int, typer.Option("--concurrency", help="burst: requests in flight")] = 4,
    input_tokens: Annotated[int, typer.Option("--input", help="burst: prompt tokens per request")] = 128,
    output_tokens: Annotated[int, typer.Option("--output", help="burst: output tokens per request (ignore_eos)")] = 64,
    timeout: Annotated[float, typer.Option("--timeout", help="burst: seconds per request")] = 600.0,
    cold: Annotated[bool, typer.Option("--cold", help="each boot with a fresh, empty compile cache")] = False,
    margin: Annotated[str | None, typer.Option("--margin", help="recommend this much below the highest pass")] = None,
    stop_at_fail: Annotated[
        bool, typer.Option("--stop-at-fail", help="stop at the first failure above a pass")
    ] = False,
    build: Annotated[str | None, typer.Option("--build", help="label the receipts with this build")] = None,
    check: Annotated[
        bool, typer.Option("--check/--no-check", help="check flags and knobs against the installed engine")
    ] = True,
    receipts: Annotated[
        Path | None, typer.Option("--receipts", help="receipt folder (default: receipts/ beside it)")
    ] = None,
    logs: Annotated[Path | None, typer.Option("--logs", help="engine log folder (default: logs/ beside it)")] = None,
) -> None:
    """Find the highest value of a memory setting that still boots and serves a burst; recommend one below."""
    from forklift.config import Config
    from forklift.errors import ForkliftError, UsageError
    from forklift.ladder import Burst, parse_axis
    from forklift.ladder.run import Engine, run_ladder
    from forklift.receipts.envelope import Labels

    parsed = parse_axis(axis)
    if requests < 1 or concurrency < 1 or input_tokens < 1 or output_tokens < 1 or timeout <= 0:
        raise UsageError("--requests, --concurrency, --input, --output and --timeout must all be positive")
    config: Config = load()
    burst = Burst(
        requests=requests,
        concurrency=concurrency,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        timeout_s=timeout,
    )

    def shown(cell: LadderCell) -> None:
        console.print(f"{parsed.key}={cell.value}: {cell.outcome}{' (' + cell.reason + ')' if cell.reason else ''}")

    try:
        body, path = run_ladder(
            config,
            profile,
            sets or [],
            parsed,
            burst,
            receipts=receipts or config.root / "receipts",
            logs=logs or config.root / "logs",
            cold=cold,
            margin=margin,
            stop_at_fail=stop_at_fail,
            check=check,
            engine=Engine(labels=Labels(build=build) if build else None),
            on_cell=shown,
        )
    except KeyboardInterrupt:
        console.print("interrupted: every finished cell is in the ladder receipt")
        raise typer.Exit(130) from None
    console.print(ladder_table(body))
    console.print(
        f"highest pass: {body.highest_pass or 'none'}; recommended: {body.recommended or 'none'} ({body.note})"
    )
    console.print(f"receipt: {path}", soft_wrap=True)
    if body.highest_pass is None:
        raise ForkliftError(f"ladder {parsed.key}: no value passed; receipt {path}")
