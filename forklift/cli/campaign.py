"""`forklift campaign campaign.toml`: every build in every setting, interleaved, resumable, then the report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from forklift.cli.app import MEASURE, app, console

if TYPE_CHECKING:
    from forklift.campaign.run import Runner


@app.command(rich_help_panel=MEASURE)
def campaign(
    file: Annotated[Path, typer.Argument(help="campaign.toml: builds, settings, suites, order")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="verify the builds and print the plan: every boot's argv")
    ] = False,
    ray: Annotated[
        str | None,
        typer.Option("--ray", metavar="ADDRESS", help="run every cell as a task on this Ray cluster (HOST:PORT)"),
    ] = None,
    max_cells: Annotated[
        int | None,
        typer.Option("--max-cells", min=1, help="start at most N cells in this run, then stop between two cells"),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            metavar="TIME",
            help="stop between two cells rather than start one that would end after TIME: a time from now "
            "('9m', '540s') or an ISO 8601 time ('2026-12-06T02:00Z')",
        ),
    ] = None,
) -> None:
    """Run a campaign into one folder of labelled receipts, then decide: exit 0 SHIP, 1 HOLD, 3 UNDECIDED.

    Run it again to resume where it stopped.
    """
    from forklift.campaign import load_campaign_file, make_campaign_plan
    from forklift.campaign.builds import verify_builds
    from forklift.campaign.run import Runner, WindowEnd, finished, plan_lines
    from forklift.config import load_config
    from forklift.errors import ForkliftError

    spec = load_campaign_file(file)
    config = load_config(spec.at(spec.config))
    plan = make_campaign_plan(spec, config)
    builds = {b.name: b for b in verify_builds(spec, config)}

    def say(line: str) -> None:
        console.print(line, soft_wrap=True, markup=False)

    runner = Runner(spec, config, builds, plan, say=say, max_cells=max_cells, until=deadline(until))
    if ray or spec.executor == "ray":
        from forklift.campaign.cluster import ray_executor

        runner.execute = ray_executor(spec, ray)
    if dry_run:
        for line in plan_lines(runner):
            say(line)
        return
    for build in builds.values():
        say(f"build {build.name}: {build.proof}")
    try:
        ran, skipped = runner.run()
    except KeyboardInterrupt:
        done = sum(1 for key in plan.keys if finished(runner.receipts / key))
        say(f"interrupted: {done} of {len(plan.keys)} cells finished; run the same command again to resume")
        raise typer.Exit(130) from None
    except WindowEnd as stop:
        done = sum(1 for key in plan.keys if finished(runner.receipts / key))
        say(f"{stop}; {done} of {len(plan.keys)} cells finished: run the same command again to go on")
        raise typer.Exit(WINDOW_EXIT) from None
    say(f"{ran} cells run, {skipped} finished before and skipped; receipts in {runner.receipts}")
    from forklift.report import load_campaign, render_report

    if spec.report:
        result, files = render_report(runner.receipts, spec.at(spec.report), baseline=spec.baseline)
        say(f"report: {files[0]}")
    else:
        result = load_campaign(runner.receipts, baseline=spec.baseline)
    failed = [key for key in plan.keys if _status(runner, key) != "ok"]
    if failed:
        say(f"campaign: {len(failed)} cell(s) did not pass: {', '.join(failed)} (see the report)")
    if spec.ship is None:
        if failed:
            raise ForkliftError(f"campaign: {len(failed)} cell(s) did not pass (see the report)")
        return
    from forklift.report.ship import EXIT_CODES, decide, decision_lines, overall

    decisions = decide(result, spec.ship)
    for line in decision_lines(decisions, result.baseline):
        say(line)
    raise typer.Exit(EXIT_CODES[overall(decisions)])


WINDOW_EXIT = 75  # sysexits' EX_TEMPFAIL: not a decision yet; the same command goes on


def deadline(text: str | None) -> float | None:
    """--until as epoch seconds: a time from now ('9m') or an ISO 8601 time (UTC unless it says)."""
    if text is None:
        return None
    import time
    from datetime import datetime, timezone

    from forklift.campaign.precision import parse_budget
    from forklift.errors import ConfigError, UsageError

    try:
        return time.time() + parse_budget(text, "--until")
    except ConfigError:
        pass
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--until {text!r}: give a time from now ('9m', '540s') or an ISO 8601 time") from None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def _status(runner: Runner, key: str) -> str | None:
    from forklift.campaign.run import CELL_KIND
    from forklift.receipts.store import read_receipt, receipts_in

    found = receipts_in(runner.receipts / key, f"*-{CELL_KIND}-*")
    return read_receipt(found[-1]).status if found else None
