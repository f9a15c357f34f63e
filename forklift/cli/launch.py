"""`forklift launch` and `forklift stop`: print or boot a profile, supervise it, stop it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from forklift.cli.app import ENGINE, ReceiptsOption, app, console, load, receipts_dir, say, warn
from forklift.cli.progress import BootStatus
from forklift.errors import UsageError

if TYPE_CHECKING:
    from forklift.launch.boot import Booted

SetsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set", metavar="AXIS=CHOICE", help="axis=choice, args.FLAG=VALUE (a TOML value) or env.NAME=VALUE; repeatable"
    ),
]
LogsOption = Annotated[
    Path | None, typer.Option("--logs", help="engine log folder (default: logs/ beside forklift.toml)")
]
PortOption = Annotated[int | None, typer.Option("--port", help="listen on this port instead of the profile's")]

# The server a measuring command (bench, quality, canary) talks to: a running one, or a profile it launches.
SERVER = "Server"
UrlOption = Annotated[
    str | None, typer.Option("--url", help="base URL of any OpenAI-compatible server", rich_help_panel=SERVER)
]
ProfileOption = Annotated[
    str | None,
    typer.Option(
        "--profile", help="launch this forklift.toml profile, run against it, stop it", rich_help_panel=SERVER
    ),
]
ServerSetsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="AXIS=CHOICE",
        help="with --profile: axis=choice, args.FLAG=VALUE, env.NAME=VALUE",
        rich_help_panel=SERVER,
    ),
]
ServerLogsOption = Annotated[
    Path | None,
    typer.Option(
        "--logs", help="with --profile: engine log folder (default: logs/ beside forklift.toml)", rich_help_panel=SERVER
    ),
]
ModelOption = Annotated[
    str | None,
    typer.Option("--model", help="served model name (default: the first /v1/models lists)", rich_help_panel=SERVER),
]


@app.command(rich_help_panel=ENGINE)
def launch(
    profile: Annotated[str, typer.Argument(help="a [profiles.NAME] of forklift.toml")],
    sets: SetsOption = None,
    print_only: Annotated[
        bool, typer.Option("--print", help="print the exact argv and environment, one per line; start nothing")
    ] = False,
    print_format: Annotated[
        str, typer.Option("--format", help="with --print: lines (default), sh, env or json", metavar="FORMAT")
    ] = "lines",
    port: PortOption = None,
    control: Annotated[
        bool,
        typer.Option(
            "--control",
            help="export a made-up engine variable; fail unless the engine warns about exactly it, then stop",
        ),
    ] = False,
    check: Annotated[
        bool, typer.Option("--check/--no-check", help="check flags and knobs against the installed engine")
    ] = True,
    receipts: ReceiptsOption = None,
    logs: LogsOption = None,
    build: Annotated[
        str | None,
        typer.Option("--build", help="label the receipt with this build (default: engine version + overlay hash)"),
    ] = None,
) -> None:
    """Boot a profile as a supervised server (Ctrl-C or `forklift stop` ends it), or --print its command."""
    from forklift.launch.plan import make_launch_plan
    from forklift.launch.recipe import recipe
    from forklift.launch.session import launch_and_serve
    from forklift.receipts.envelope import Labels

    if print_format != "lines" and not print_only:
        raise UsageError("--format goes with --print")
    config = load()
    plan = make_launch_plan(config, profile, sets or [], port=port, check=check)
    for warning in plan.warnings:
        warn(warning)
    if print_only:
        for line in recipe(plan.resolved, print_format):
            typer.echo(line)
        if plan.checked_against is None and check:
            knobs = f"knobs checked against {plan.knobs_from}" if plan.knobs_from else "knobs not checked"
            say(f"note: engine not installed here: flags not checked; {knobs}", err=True)
        return

    def ready(booted: Booted) -> None:
        status.stop()
        facts = booted.body.facts
        say(f"ready in {booted.body.boot_seconds:.1f} s at {booted.server.url} (log {booted.server.log_path})")
        for warning in facts.warnings:
            if warning not in plan.warnings:  # the preflight's (the plan's were shown before the boot)
                warn(warning)
        say(
            f"KV pool: {_count(facts.kv_pool_tokens)} tokens ({facts.kv_pool_device or '?'}), "
            f"KV memory: {facts.kv_memory_gib} GiB, max concurrency: {facts.max_concurrency}x "
            f"at {_count(facts.max_concurrency_tokens)} tokens per request"
        )
        for key, value in facts.extra.items():
            say(f"boot fact: {key}={value}")
        if control:
            say(f"positive control: the engine warned about {facts.unknown_env[0]}")
        elif facts.unknown_env:
            warn(f"engine reports unknown variables: {', '.join(facts.unknown_env)}")
        say(f"receipt {booted.receipt_path}")
        if not control:
            say("serving; Ctrl-C or `forklift stop` to end")

    with BootStatus(console, plan.resolved.profile) as status:
        booted = launch_and_serve(
            config,
            plan,
            receipts_dir(receipts),
            logs or config.root / "logs",
            control=control,
            on_ready=ready,
            on_start=status.on_start,
            on_poll=status.on_poll,
            labels=Labels(build=build) if build else None,
        )
    say("stopped: the engine's process group is gone")
    if booted.body.after_stop:
        say(f"GPUs after stop: {booted.body.after_stop}")


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


@app.command(rich_help_panel=ENGINE)
def stop(
    profile: Annotated[str | None, typer.Argument(help="stop launches of this profile (default: all)")] = None,
    port: Annotated[int | None, typer.Option("--port", help="only the launch listening on this port")] = None,
) -> None:
    """Stop running launches: terminate the engine's process group, wait, kill; nothing is left behind."""
    from forklift.errors import ForkliftError
    from forklift.launch.pidfiles import listed, stop_running

    chosen = [r for r in listed() if (profile is None or r.profile == profile) and (port is None or r.port == port)]
    if not chosen:
        raise ForkliftError(
            f"no running launch{' of ' + profile if profile else ''}{f' on port {port}' if port else ''}"
        )
    for entry in chosen:
        stop_running(entry)
        say(f"stopped {entry.profile} at {entry.url} (engine pid {entry.server})")
