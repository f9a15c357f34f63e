"""`forklift canary`: pass/fail correctness checks against a server or a launched profile; a receipt per suite."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from forklift.cli.app import MEASURE, ReceiptsOption, app
from forklift.cli.launch import ModelOption, ProfileOption, ServerLogsOption, ServerSetsOption, UrlOption
from forklift.cli.quality import EngineOption, TimeoutOption, finish, run_suites, suite_names
from forklift.engines import DEFAULT_ENGINE
from forklift.errors import UsageError

if TYPE_CHECKING:
    from forklift.quality.endpoint import Endpoint
    from forklift.quality.schema import SuiteBody


@app.command("canary", rich_help_panel=MEASURE)
def canary(
    suite: Annotated[
        list[str] | None,
        typer.Option(
            "--suite", help="tools, json, needle, cold-pair, soak, logscan (comma-separated or repeated; run in order)"
        ),
    ] = None,
    url: UrlOption = None,
    profile: ProfileOption = None,
    sets: ServerSetsOption = None,
    logs: ServerLogsOption = None,
    model: ModelOption = None,
    repeats: Annotated[int, typer.Option("--repeats", help="tools/json: consecutive forced requests")] = 20,
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="tools/json: answer length limit")] = 64,
    label: Annotated[str, typer.Option("--label", help="tools/json: the const label the schema fixes")] = "SPEC_OK",
    context_tokens: Annotated[
        int, typer.Option("--context-tokens", help="needle/cold-pair: filler context, in tokens")
    ] = 1500,
    depth: Annotated[
        list[float] | None,
        typer.Option("--depth", help="needle: where the needle sits (0 start .. 1 end; repeat for one request each)"),
    ] = None,
    needle: Annotated[
        str, typer.Option("--needle", help="needle: the exact passphrase to retrieve (one line, no '\"')")
    ] = "blue-harbor-7391",
    force_choice: Annotated[
        bool,
        typer.Option("--force-choice", help="needle: force the answer by grammar (a positive control of the pipeline)"),
    ] = False,
    requests: Annotated[int, typer.Option("--requests", help="soak: serial requests")] = 120,
    soak_tokens: Annotated[
        int, typer.Option("--soak-tokens", help="soak: tokens each request decodes (ignore_eos)")
    ] = 64,
    log: Annotated[
        Path | None, typer.Option("--log", help="with --url: the server's log (logscan, grammar rejections)")
    ] = None,
    timeout: TimeoutOption = 600.0,
    engine: EngineOption = DEFAULT_ENGINE,
    receipts: ReceiptsOption = None,
) -> None:
    """Forced tool calls, JSON schema, needle, cold/cached pair, soak, log scan; exit 0 only if every suite passes."""
    from forklift.canary import (
        CANARY_SUITES,
        ColdPairOptions,
        LogscanOptions,
        NeedleOptions,
        SoakOptions,
        StructuredOptions,
        run_cold_pair,
        run_json,
        run_logscan,
        run_needle,
        run_soak,
        run_tools,
    )
    from forklift.quality.session import ReadySuite

    names = suite_names(suite or [], CANARY_SUITES)

    def structured() -> StructuredOptions:
        return StructuredOptions(repeats=repeats, max_tokens=max_tokens, arguments={"ok": True, "label": label})

    makers: dict[str, Callable[[], Callable[[Endpoint], SuiteBody]]] = {
        "tools": lambda: partial(run_tools, options=structured()),
        "json": lambda: partial(run_json, options=structured()),
        "needle": lambda: partial(
            run_needle,
            options=NeedleOptions(
                tokens=context_tokens, depths=tuple(depth or [0.5]), needle=needle, force_choice=force_choice
            ),
        ),
        "cold-pair": lambda: partial(run_cold_pair, options=ColdPairOptions(tokens=context_tokens)),
        "soak": lambda: partial(run_soak, options=SoakOptions(requests=requests, max_tokens=soak_tokens)),
        "logscan": lambda: partial(run_logscan, options=LogscanOptions(log=log)),
    }
    # the named suites' options are made (and checked) before any server is contacted or launched, and only
    # theirs: a bad shared option is blamed on a suite that was asked for
    runs = {name: makers[name]() for name in names}
    if "logscan" in names and url is not None and log is None:
        raise UsageError("--suite logscan with --url needs --log FILE (the server's log)")
    outcomes = run_suites(
        lambda config: [ReadySuite("canary", name, runs[name]) for name in names],
        url=url,
        profile=profile,
        sets=sets or [],
        logs=logs,
        model=model,
        timeout=timeout,
        engine=engine,
        engine_roots=[],
        log=log,
        receipts=receipts,
    )
    finish(outcomes, "canary")
