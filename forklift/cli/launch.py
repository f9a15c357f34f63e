"""`forklift launch` and `forklift stop`: print or boot a profile, supervise it, stop it."""

from __future__ import annotations

from pathlib import Path

import typer

from forklift.cli.app import app, console, err_console, load


@app.command()
def launch(
    profile: str = typer.Argument(..., help="a [profiles.NAME] of forklift.toml"),
    sets: list[str] = typer.Option(
        [], "--set", help="axis=choice, args.FLAG=VALUE (a TOML value) or env.NAME=VALUE; repeatable"
    ),
    print_only: bool = typer.Option(
        False, "--print", help="print the exact argv and environment, one per line; start nothing"
    ),
    port: int | None = typer.Option(None, "--port", help="listen on this port instead of the profile's"),
    control: bool = typer.Option(
        False,
        "--control",
        help="export a made-up engine variable; fail unless the engine warns about exactly it, then stop",
    ),
    check: bool = typer.Option(True, "--check/--no-check", help="check flags and knobs against the installed engine"),
    receipts: Path | None = typer.Option(
        None, "--receipts", help="receipt folder (default: receipts/ beside forklift.toml)"
    ),
    logs: Path | None = typer.Option(None, "--logs", help="engine log folder (default: logs/ beside forklift.toml)"),
) -> None:
    """Boot a profile as a supervised server (Ctrl-C or `forklift stop` ends it), or --print its command."""
    from forklift.launch.resolve import printed_lines
    from forklift.launch.run import launch as run_launch
    from forklift.launch.run import make_plan
    from forklift.receipts import receipts_folder

    config = load()
    plan = make_plan(config, profile, sets, port=port, check=check)
    for warning in plan.warnings:
        err_console.print(f"[yellow]warning:[/] {warning}", soft_wrap=True)
    if print_only:
        resolved = plan.resolved
        lines = printed_lines(resolved)
        choices = " ".join(f"{k}={v}" for k, v in resolved.choices.items())
        typer.echo(f"# profile {resolved.profile}{' (' + choices + ')' if choices else ''}")
        typer.echo("# argv")
        for line in lines[: len(resolved.argv)]:
            typer.echo(line)
        typer.echo("# env")
        for line in lines[len(resolved.argv) :]:
            typer.echo(line)
        if plan.checked_against is None and check:
            knobs = f"knobs checked against {plan.knobs_from}" if plan.knobs_from else "knobs not checked"
            err_console.print(f"note: engine not installed here: flags not checked; {knobs}", soft_wrap=True)
        return

    def ready(booted) -> None:
        facts = booted.body.facts
        console.print(
            f"ready in {booted.body.boot_seconds:.1f} s at {booted.server.url} (log {booted.server.log_path})",
            soft_wrap=True,
        )
        console.print(
            f"KV pool: {_count(facts.kv_pool_tokens)} tokens ({facts.kv_pool_device or '?'}), "
            f"KV memory: {facts.kv_memory_gib} GiB, max concurrency: {facts.max_concurrency}x "
            f"at {_count(facts.max_concurrency_tokens)} tokens per request",
            soft_wrap=True,
        )
        for key, value in facts.extra.items():
            console.print(f"boot fact: {key}={value}", soft_wrap=True)
        if control:
            console.print(f"positive control: the engine warned about {facts.unknown_env[0]}", soft_wrap=True)
        elif facts.unknown_env:
            err_console.print(f"[yellow]warning:[/] engine reports unknown variables: {', '.join(facts.unknown_env)}")
        console.print(f"receipt {booted.receipt_path}", soft_wrap=True)
        if not control:
            console.print("serving; Ctrl-C or `forklift stop` to end", soft_wrap=True)

    run_launch(
        config,
        plan,
        receipts_folder(receipts, config.path),
        logs or config.root / "logs",
        control=control,
        on_ready=ready,
        serve=not control,
    )
    console.print("stopped: the engine's process group is gone")


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


@app.command()
def stop(
    profile: str | None = typer.Argument(None, help="stop launches of this profile (default: all)"),
    port: int | None = typer.Option(None, "--port", help="only the launch listening on this port"),
) -> None:
    """Stop running launches: terminate the engine's process group, wait, kill; nothing is left behind."""
    from forklift.errors import ForkliftError
    from forklift.launch.running import listed, stop_running

    chosen = [r for r in listed() if (profile is None or r.profile == profile) and (port is None or r.port == port)]
    if not chosen:
        raise ForkliftError(
            f"no running launch{' of ' + profile if profile else ''}{f' on port {port}' if port else ''}"
        )
    for entry in chosen:
        stop_running(entry)
        console.print(f"stopped {entry.profile} at {entry.url} (engine pid {entry.server})", soft_wrap=True)
