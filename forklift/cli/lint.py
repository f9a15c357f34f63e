"""`forklift lint`: DEP-3 completeness, Forwarded states, and secrets or private paths a patch adds."""

from __future__ import annotations

import typer

from forklift.cli.app import SERIES, JsonOption, app, load, print_json, say


@app.command(rich_help_panel=SERIES)
def lint(as_json: JsonOption = False) -> None:
    """Lint every patch the series applies; exit 1 on any finding (`Lint-Ignore: RULE` in a patch waives one).

    Rules: dep3-description, dep3-origin, dep3-forwarded, secret, private-path (docs/commands/lint.md).
    `[series] lint = true` makes `forklift check` fail on them too."""
    from forklift.series.gate import configured_series
    from forklift.series.lint import lint_series

    series = configured_series(load())
    findings = lint_series(series)
    if as_json:
        print_json({"ok": not findings, "patches": len(series.patches), "findings": [f.model_dump() for f in findings]})
    else:
        for finding in findings:
            say(("FAIL", "red"), f" {finding.line()}")
        verdict = ("OK", "green") if not findings else ("FAILED", "red")
        say(verdict, f" — {len(series.patches)} patch(es), {len(findings)} finding(s)")
    if findings:
        raise typer.Exit(1)
