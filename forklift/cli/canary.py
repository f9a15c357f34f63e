"""`forklift canary`: pass/fail correctness checks against a server or a launched profile; a receipt per suite."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import typer

from forklift.cli.app import app
from forklift.cli.quality import finish, run_suites, suite_names
from forklift.errors import UsageError


@app.command("canary")
def canary(
    suite: list[str] = typer.Option(
        [], "--suite", help="tools, json, needle, cold-pair, soak, logscan (comma-separated or repeated; run in order)"
    ),
    url: str | None = typer.Option(None, "--url", help="base URL of any OpenAI-compatible server"),
    profile: str | None = typer.Option(None, "--profile", help="launch this forklift.toml profile, run, stop it"),
    sets: list[str] = typer.Option([], "--set", help="with --profile: axis=choice, args.FLAG=VALUE, env.NAME=VALUE"),
    logs: Path | None = typer.Option(None, "--logs", help="with --profile: engine log folder"),
    model: str | None = typer.Option(None, "--model", help="served model name (default: the first listed)"),
    repeats: int = typer.Option(20, "--repeats", help="tools/json: consecutive forced requests"),
    max_tokens: int = typer.Option(64, "--max-tokens", help="tools/json: answer length limit"),
    label: str = typer.Option("SPEC_OK", "--label", help="tools/json: the const label the schema fixes"),
    context_tokens: int = typer.Option(1500, "--context-tokens", help="needle/cold-pair: filler context, in tokens"),
    depth: float = typer.Option(0.5, "--depth", help="needle: where the needle sits (0 start .. 1 end)"),
    needle: str = typer.Option("forklift-needle-7391", "--needle", help="needle: the exact string to retrieve"),
    force_choice: bool = typer.Option(
        False, "--force-choice", help="needle: force the answer by grammar (a positive control of the pipeline)"
    ),
    requests: int = typer.Option(120, "--requests", help="soak: serial requests"),
    soak_tokens: int = typer.Option(64, "--soak-tokens", help="soak: tokens each request decodes (ignore_eos)"),
    log: Path | None = typer.Option(None, "--log", help="with --url: the server's log (logscan, grammar rejections)"),
    timeout: float = typer.Option(600.0, "--timeout", help="seconds per request"),
    engine: str = typer.Option("vllm", "--engine", help="engine adapter (metrics and log patterns)"),
    receipts: Path | None = typer.Option(None, "--receipts", help="receipt folder"),
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
    from forklift.quality.session import Suite

    names = suite_names(suite, CANARY_SUITES)
    if not 0.0 <= depth <= 1.0:
        raise UsageError(f"--depth {depth}: expected a fraction from 0 to 1")
    for option, value in (("--repeats", repeats), ("--requests", requests), ("--context-tokens", context_tokens)):
        if value < 1:
            raise UsageError(f"{option} {value}: must be at least 1")
    if "logscan" in names and url is not None and log is None:
        raise UsageError("--suite logscan with --url needs --log FILE (the server's log)")
    structured = StructuredOptions(repeats=repeats, max_tokens=max_tokens, arguments={"ok": True, "label": label})
    runs = {
        "tools": partial(run_tools, options=structured),
        "json": partial(run_json, options=structured),
        "needle": partial(
            run_needle,
            options=NeedleOptions(tokens=context_tokens, depth=depth, needle=needle, force_choice=force_choice),
        ),
        "cold-pair": partial(run_cold_pair, options=ColdPairOptions(tokens=context_tokens)),
        "soak": partial(run_soak, options=SoakOptions(requests=requests, max_tokens=soak_tokens)),
        "logscan": partial(run_logscan, options=LogscanOptions(log=log)),
    }
    outcomes = run_suites(
        lambda config: [Suite("canary", name, runs[name]) for name in names],
        url=url,
        profile=profile,
        sets=sets,
        logs=logs,
        model=model,
        timeout=timeout,
        engine=engine,
        engine_roots=[],
        log=log,
        receipts=receipts,
    )
    finish(outcomes, "canary")
