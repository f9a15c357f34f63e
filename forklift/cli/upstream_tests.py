"""`forklift upstream-tests`: the engine's own tests for what the series touches, on the patched tree."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from forklift.cli.app import ENGINE, JsonOption, ReceiptsOption, app, load, print_json, receipts_dir, say


@app.command("upstream-tests", rich_help_panel=ENGINE)
def upstream_tests(
    path: Annotated[
        Path | None, typer.Argument(help="the engine's venv or its python (default: the engine on PATH)")
    ] = None,
    only: Annotated[
        list[str] | None, typer.Option("--only", help="cover only this file the series touches (repeatable)")
    ] = None,
    match: Annotated[
        list[str] | None, typer.Option("--match", help="keep only selected test files matching this glob (repeatable)")
    ] = None,
    keyword: Annotated[str | None, typer.Option("-k", help="pytest's -k expression")] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="seconds pytest may run")] = 3600,
    listing: Annotated[bool, typer.Option("--list", help="print the selected test files and why; run nothing")] = False,
    as_json: JsonOption = False,
    receipts: ReceiptsOption = None,
) -> None:
    """Run the engine's pytest files that import or sit beside the modules the series touches, from the patched
    tree, against the installed engine (verified to carry the series); a receipt of every outcome.

    Exit 0: every collected test passed or was skipped; 1: a failure, an error or nothing collected."""
    from forklift.engines import engine_adapter
    from forklift.errors import ForkliftError
    from forklift.installed.package import engine_interpreter, locate
    from forklift.installed.upstream_tests import run_upstream_tests
    from forklift.installed.verify import verify_installed
    from forklift.series.gate import configured_series

    config = load()
    engine = engine_adapter(config.data.engine.kind)
    series = configured_series(config)
    python = engine_interpreter(path, engine.serve_script)
    if not listing:
        state = verify_installed(locate(python, engine.package, engine.serve_script), series)
        if not state.ok:
            raise ForkliftError(
                f"{python}: the installed engine does not carry the series ({state.summary()}): forklift apply {python}"
            )
    result = run_upstream_tests(
        config,
        str(python),
        series,
        only=only or [],
        match=match or [],
        keyword=keyword,
        timeout=timeout,
        receipts=receipts_dir(receipts),
        listing=listing,
    )
    if isinstance(result, list):
        for chosen in result:
            say(f"{chosen.path}: {'; '.join(chosen.reasons)}")
        say(f"{len(result)} test file(s)")
        return
    body = result.body
    if as_json:
        print_json({"ok": body.ok, "receipt": str(result.receipt), **body.model_dump(mode="json")})
    else:
        for skip in body.skips:
            say(("skipped", "yellow"), f" {skip.test}: {skip.reason}")
        for failure in body.failures:
            say(("FAIL", "red"), f" {failure.test}: {failure.reason}")
        say(
            f"{len(body.files)} file(s): {body.collected} collected, {body.passed} passed, {body.failed} failed, "
            f"{body.errors} errors, {body.skipped} skipped in {body.seconds:.0f} s (pytest exit {body.pytest_exit})"
        )
        say(("OK", "green") if body.ok else ("FAILED", "red"), f" — receipt {result.receipt}; log {result.log}")
    if not body.ok:
        raise typer.Exit(1)
