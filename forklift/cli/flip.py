"""The `forklift flip` command: try the series on a new upstream release and report per patch."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from forklift.cli.app import FLIP, JsonOption, ReceiptsOption, app, console, load, print_json, receipts_dir, say, styled

if TYPE_CHECKING:
    from forklift.flip.report import FlipReport

STYLE = {
    "exact": "green",
    "offset": "yellow",
    "fuzz": "red",
    "already-upstream": "cyan",
    "partly-upstream": "magenta",
    "recut": "red",
    "retire-candidate": "cyan",
    "upstream-own": "red",
    "file-gone": "red",
    "blocked": "red",
    "conflict": "red",
    "skipped": "dim",
}


def render(report: FlipReport) -> None:
    """The verdict table; off a terminal the console is wide (cli/app.py), so no name is folded."""
    from rich.table import Table

    table = Table(title=f"forklift flip — {report.old} → {report.new}", title_justify="left")
    table.add_column("#")
    table.add_column("patch", overflow="fold")
    table.add_column("verdict", overflow="fold")
    table.add_column("needs a look", overflow="fold")
    table.add_column("detail", overflow="fold")
    for number, p in enumerate(report.patches, 1):
        table.add_row(str(number), p.name, styled(p.verdict_text(), STYLE[p.verdict]), "; ".join(p.look), p.detail())
    console.print(table)
    for line in report.overlay_changed:
        say(("overlay", "yellow"), f" {line}")
    from forklift.flip.report import requirement_lines

    for number, line in enumerate(requirement_lines(report)):
        say(f"requirements: {line}" if number == 0 else line)
    if report.knobs_skipped:
        say(f"knobs: {report.knobs_skipped}")
    for k in report.knobs:
        say("knobs " + k.describe(report.knobs[0] if k is not report.knobs[0] else None))
    if report.knobs:
        for read in report.knobs[0].new_unregistered_reads:
            say(f"  unregistered read new in {report.new}: {read}")
        for read in report.knobs[-1].series_unregistered_reads:
            say(f"  unregistered read added by the series: {read}")
    say(report.summary())


@app.command(rich_help_panel=FLIP)
def flip(
    version: Annotated[str | None, typer.Argument(help="the upstream version (PyPI) or tag (git) to move to")] = None,
    write: Annotated[
        bool, typer.Option("--write", help="move the pin and the series (only when nothing conflicts)")
    ] = False,
    as_json: JsonOption = False,
    report_file: Annotated[
        Path | None, typer.Option("--report", help="also write the markdown flip report here")
    ] = None,
    receipts: ReceiptsOption = None,
    repo: Annotated[
        Path | None,
        typer.Option(
            "--repo", help="with --write: the fork, which gets the new release's commit the series' base line names"
        ),
    ] = None,
    upstream_repo: Annotated[
        Path | None,
        typer.Option(
            "--upstream-repo",
            help="a local clone of upstream: name the commit that carries each retired patch (git pins: their own)",
        ),
    ] = None,
    git_ref: Annotated[
        str | None,
        typer.Option(
            "--git-ref",
            metavar="<ref>",
            help="instead of a release: a branch or tag of the git pin's repository (upstream main), a dry run",
        ),
    ] = None,
) -> None:
    """Dry run by default: which patches apply, moved, are upstream (retire), conflict; knobs before/after."""
    from forklift.errors import UsageError
    from forklift.flip.report import render_markdown
    from forklift.flip.run import run_flip
    from forklift.fork.repo import Git
    from forklift.fsio import write_atomic

    if (version is None) == (git_ref is None):
        raise UsageError("give the release to flip to (VERSION) or --git-ref REF, not both")
    fork = Git(repo) if repo is not None else None
    result = run_flip(
        load(),
        version or git_ref or "",
        receipts_dir(receipts),
        progress=None if as_json else console,
        write=write,
        fork=fork,
        git_ref=git_ref is not None,
        upstream_repo=upstream_repo,
    )
    report = result.report
    if report_file:
        write_atomic(report_file, render_markdown(report))
    if as_json:
        print_json(
            {
                "ok": not report.blocked,
                "receipt": str(result.receipt),
                "written": [str(p) for p in result.written],
                **report.model_dump(mode="json"),
            }
        )
    else:
        render(report)
        for path in result.written:
            say(f"wrote {path}")
        if result.written and repo is not None:  # the pin moved; the user's fork branches did not
            say(
                f"the fork's branches still sit on {report.old}: move each with `forklift rebase {version} "
                f"--repo {repo} --branch BRANCH`, then `forklift export --from BRANCH --repo {repo}`"
            )
        verdict = ("can move", "green") if not report.blocked else ("BLOCKED", "red")
        blocked = f" ({len(report.blocked)} patch(es))" if report.blocked else ""
        nothing = ": nothing written" if write and report.blocked else ""
        say(verdict, f"{blocked}{nothing} — receipt {result.receipt}")
    if report.blocked:
        raise typer.Exit(1)
