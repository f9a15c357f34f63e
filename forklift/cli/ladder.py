"""`forklift ladder PROFILE --axis KEY=...`: boot each value, burst it, stop; print where it stops booting."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from forklift.cli.app import app, console, load


def ladder_table(body) -> object:
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


@app.command()
def ladder(
    profile: str = typer.Argument(..., help="a [profiles.NAME] of forklift.toml"),
    axis: str = typer.Option(..., "--axis", help="KEY=V1,V2,... or KEY=START:STOP:STEP (a flag or an env knob)"),
    sets: list[str] = typer.Option([], "--set", help="fixed for every cell: axis=choice, args.FLAG=V, env.NAME=V"),
    requests: int = typer.Option(16, "--requests", help="burst: requests per cell"),
    concurrency: int = typer.Option(4, "--concurrency", help="burst: requests in flight"),
    input_tokens: int = typer.Option(128, "--input", help="burst: prompt tokens per request"),
    output_tokens: int = typer.Option(64, "--output", help="burst: output tokens per request (ignore_eos)"),
    timeout: float = typer.Option(600.0, "--timeout", help="burst: seconds per request"),
    cold: bool = typer.Option(False, "--cold", help="each boot with a fresh, empty compile cache"),
    margin: str | None = typer.Option(None, "--margin", help="recommend this much below the highest pass"),
    stop_at_fail: bool = typer.Option(False, "--stop-at-fail", help="stop at the first failure above a pass"),
    build: str | None = typer.Option(None, "--build", help="label the receipts with this build"),
    check: bool = typer.Option(True, "--check/--no-check", help="check flags and knobs against the installed engine"),
    receipts: Path | None = typer.Option(None, "--receipts", help="receipt folder (default: receipts/ beside it)"),
    logs: Path | None = typer.Option(None, "--logs", help="engine log folder (default: logs/ beside it)"),
) -> None:
    """Find the highest value of a memory setting that still boots and serves a burst; recommend one below."""
    from forklift.config import Config
    from forklift.errors import ForkliftError, UsageError
    from forklift.ladder import Burst, parse_axis
    from forklift.ladder.run import Engine, run_ladder

    parsed = parse_axis(axis)
    if requests < 1 or concurrency < 1 or input_tokens < 1 or output_tokens < 1 or timeout <= 0:
        raise UsageError("--requests, --concurrency, --input, --output and --timeout must all be positive")
    config: Config = load()  # type: ignore[assignment]  # load() is typed loosely to keep startup lazy
    burst = Burst(
        requests=requests,
        concurrency=concurrency,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        timeout_s=timeout,
    )

    def shown(cell) -> None:
        console.print(f"{parsed.key}={cell.value}: {cell.outcome}{' (' + cell.reason + ')' if cell.reason else ''}")

    try:
        body, path = run_ladder(
            config,
            profile,
            sets,
            parsed,
            burst,
            receipts=receipts or config.root / "receipts",
            logs=logs or config.root / "logs",
            cold=cold,
            margin=margin,
            stop_at_fail=stop_at_fail,
            check=check,
            engine=Engine(labels={"build": build} if build else None),
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
