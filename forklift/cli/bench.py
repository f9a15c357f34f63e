"""`forklift bench`: streaming load against an OpenAI-compatible server, and `bench import`."""

from __future__ import annotations

from pathlib import Path

import typer

from forklift.cli.app import app, console, load, state
from forklift.errors import ForkliftError, UsageError

bench_app = typer.Typer(help="Benchmark a server: single stream, concurrency sweep or batch; receipts per run.")
app.add_typer(bench_app, name="bench")


def receipts_folder(given: Path | None) -> Path:
    """Bench runs without a forklift.toml too: the receipts rule with the config file when there is one."""
    from forklift.receipts import receipts_folder as rule

    config = state.config_path / "forklift.toml" if state.config_path.is_dir() else state.config_path
    return rule(given, config if config.exists() else None)


def parse_concurrency(text: str) -> list[int]:
    """The levels as given; whether they make a bench is cell_specs' to say."""
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--concurrency {text!r}: expected a comma-separated list of integers, e.g. 1,2,4") from None


def parse_synthetic(text: str) -> tuple[int, int]:
    try:
        inp, out = (int(part) for part in text.split(":"))
    except ValueError:
        raise UsageError(f"--synthetic {text!r}: expected INPUT:OUTPUT tokens, e.g. 128:512") from None
    return inp, out


class RichProgress:
    """rich progress bars: one task per (cell, run)."""

    def __init__(self, progress) -> None:
        self.progress = progress
        self.task = None

    def start(self, cell: str, run: int, total: int) -> None:
        self.task = self.progress.add_task(f"{cell} run {run}", total=total)

    def advance(self, record) -> None:
        if self.task is not None:
            self.progress.advance(self.task)


def _ms(dist: dict | None, key: str) -> str:
    return "-" if not dist else f"{dist[key]:.1f}"


def _num(value, fmt: str = "{:.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def _check(cross: dict) -> str:
    if not cross:
        return "-"
    if cross["match"]:
        return "ok"
    return f"[red]{cross['server_generation_tokens']} vs {cross['client_completion_tokens']}[/]"


# (row label, how to read it from a cell): metrics as rows, one column per cell, so a sweep fits.
ROWS = (
    ("requests ok/n", lambda c: f"{c.aggregate.get('ok', 0)}/{c.aggregate.get('requests', 0)}"),
    ("failures", lambda c: ", ".join(f"{k} {v}" for k, v in c.aggregate.get("failures", {}).items()) or "-"),
    ("output tokens", lambda c: str(c.aggregate.get("output_tokens", "-"))),
    ("duration s", lambda c: _num(c.duration_s, "{:.2f}")),
    (
        "TTFT ms median / p99",
        lambda c: f"{_ms(c.aggregate.get('ttft_ms'), 'median')} / {_ms(c.aggregate.get('ttft_ms'), 'p99')}",
    ),
    (
        "TPOT ms median / p99",
        lambda c: f"{_ms(c.aggregate.get('tpot_ms'), 'median')} / {_ms(c.aggregate.get('tpot_ms'), 'p99')}",
    ),
    (
        "ITL ms median / p99",
        lambda c: f"{_ms(c.aggregate.get('itl_ms'), 'median')} / {_ms(c.aggregate.get('itl_ms'), 'p99')}",
    ),
    (
        "E2E ms median / p99",
        lambda c: f"{_ms(c.aggregate.get('e2e_ms'), 'median')} / {_ms(c.aggregate.get('e2e_ms'), 'p99')}",
    ),
    ("per-stream decode tok/s", lambda c: _num(c.aggregate.get("per_stream_decode_tok_s"))),
    ("aggregate decode tok/s", lambda c: _num(c.aggregate.get("aggregate_decode_tok_s"))),
    ("e2e tok/s", lambda c: _num(c.aggregate.get("e2e_tok_s"))),
    ("tok/step (spec decode)", lambda c: _num(c.metrics_delta.get("tok_per_step"), "{:.2f}")),
    ("prefix cache hits", lambda c: _num(c.metrics_delta.get("prefix_cache_hits"), "{:.0f}")),
    ("preemptions", lambda c: _num(c.metrics_delta.get("preemptions"), "{:.0f}")),
    ("KV pool tokens", lambda c: _num(c.aggregate.get("kv_pool_tokens"), "{:,}")),
    ("gen tokens server=client", lambda c: _check(c.cross_check)),
)


def render(body) -> None:
    from rich.table import Table

    table = Table(title=f"forklift bench: {body.model} @ {body.url} ({body.workload.name})", title_justify="left")
    table.add_column("")
    for cell in body.cells:
        table.add_column(f"{cell.name} (C{cell.concurrency})", justify="right")
    for label, read in ROWS:
        table.add_row(label, *(read(cell) for cell in body.cells))
    console.print(table)
    if body.server_info:
        console.print("server: " + ", ".join(f"{k}={v}" for k, v in body.server_info.items()))
    console.print("aggregate decode = C x 1000 / median TPOT (ms); statistics over the kept runs only")


@bench_app.callback(invoke_without_command=True)
def bench(
    ctx: typer.Context,
    url: str | None = typer.Option(None, "--url", help="base URL of any OpenAI-compatible server"),
    profile: str | None = typer.Option(None, "--profile", help="launch this forklift.toml profile, bench it, stop it"),
    sets: list[str] = typer.Option([], "--set", help="with --profile: axis=choice, args.FLAG=VALUE, env.NAME=VALUE"),
    logs: Path | None = typer.Option(
        None, "--logs", help="with --profile: engine log folder (default: logs/ beside forklift.toml)"
    ),
    model: str | None = typer.Option(None, "--model", help="served model name (default: the first /v1/models lists)"),
    cohort: Path | None = typer.Option(None, "--cohort", help="prompt cohort, JSONL: id, messages or prompt, ..."),
    synthetic: str | None = typer.Option(None, "--synthetic", help="IN:OUT synthetic prompts of exact lengths"),
    prompts: int = typer.Option(16, "--prompts", help="how many distinct synthetic prompts"),
    endpoint: str = typer.Option("completions", "--endpoint", help="synthetic prompts: chat or completions"),
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="cohort default for lines without one"),
    ignore_eos: bool = typer.Option(
        False, "--ignore-eos", help="cohort: generate exactly max_tokens (synthetic always does)"
    ),
    sampling: str = typer.Option("default", "--sampling", help="default (model's), greedy or seeded"),
    seed: int = typer.Option(0, "--seed", help="base seed of the seeded preset, synthetic text and pacing"),
    no_salt: bool = typer.Option(False, "--no-salt", help="send prompts as they are: allow prefix-cache reuse"),
    salt_nonce: str = typer.Option("forklift", "--salt-nonce", help="change to re-bench a live server off its cache"),
    mode: str | None = typer.Option(
        None, "--mode", help="single, sweep or batch (default: sweep when --concurrency is given)"
    ),
    concurrency: str | None = typer.Option(None, "--concurrency", help="e.g. 1,2,4,8"),
    requests: int | None = typer.Option(None, "--requests", help="requests per cell (default: the workload once)"),
    rate: float | None = typer.Option(None, "--rate", help="pace arrivals at this many requests/s"),
    burstiness: float = typer.Option(1.0, "--burstiness", help="gamma shape of arrival gaps (1 = Poisson)"),
    runs: int = typer.Option(1, "--runs", help="repeat each cell; with --keep last the first runs are warm-up"),
    keep: str = typer.Option("last", "--keep", help="last (drop warm-up runs) or all"),
    timeout: float = typer.Option(600.0, "--timeout", help="seconds per request"),
    engine: str = typer.Option("vllm", "--engine", help="engine adapter naming the server's metrics"),
    receipts: Path | None = typer.Option(None, "--receipts", help="receipt folder"),
) -> None:
    """Stream a workload at a server; prints a table and writes a bench receipt with every request."""
    if ctx.invoked_subcommand is not None:
        return
    from dataclasses import replace

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from forklift.bench.runner import BenchPlan, cell_specs
    from forklift.bench.session import bench as run
    from forklift.bench.session import bench_launched, discover_model
    from forklift.workload import load_cohort, synthetic_workload

    if (url is None) == (profile is None):
        raise UsageError("give one server: --url URL of a running server, or --profile NAME to launch")
    if sets and profile is None:
        raise UsageError("--set needs --profile (it changes what is launched)")
    if (cohort is None) == (synthetic is None):
        raise UsageError("give exactly one workload: --cohort FILE.jsonl or --synthetic IN:OUT")
    if url is not None and not url.startswith(("http://", "https://")):
        raise UsageError(f"--url {url!r}: expected http://HOST:PORT or https://HOST:PORT")
    if endpoint not in ("chat", "completions"):
        raise UsageError(f"--endpoint {endpoint!r}: expected chat or completions")
    levels = parse_concurrency(concurrency) if concurrency is not None else [1]
    mode = mode or ("sweep" if concurrency else "single")
    if synthetic is not None:
        inp, out = parse_synthetic(synthetic)
        workload = synthetic_workload(
            input_tokens=inp,
            output_tokens=out,
            count=prompts,
            endpoint=endpoint,  # type: ignore[arg-type]
            preset=sampling,
            seed=seed,
            salted=not no_salt,
            salt_nonce=salt_nonce,
        )
    else:
        workload = load_cohort(
            cohort,
            max_tokens=max_tokens,
            ignore_eos=ignore_eos,
            preset=sampling,
            seed=seed,  # type: ignore[arg-type]
            salted=not no_salt,
            salt_nonce=salt_nonce,
        )
    # Built now so bad options are refused before anything is launched; url and model come later.
    options = BenchPlan(
        url="",
        model="",
        workload=workload,
        cells=cell_specs(mode, levels, requests, rate, burstiness),
        runs=runs,
        keep=keep,
        timeout=timeout,
        engine=engine,
        seed=seed,  # type: ignore[arg-type]
    )

    def make_plan(base_url: str, served: str | None = None) -> BenchPlan:
        return replace(options, url=base_url.rstrip("/"), model=model or served or discover_model(base_url))

    folder = receipts_folder(receipts)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    if profile is not None:
        config = load()
        with Progress(*columns, console=console, transient=True) as progress:
            outcome = bench_launched(
                config,
                profile,
                sets,
                make_plan,
                mode=mode,
                folder=folder,
                logs=logs or config.root / "logs",
                progress=RichProgress(progress),
            )
    else:
        with Progress(*columns, console=console, transient=True) as progress:
            outcome = run(make_plan(url), mode=mode, folder=folder, progress=RichProgress(progress))
    render(outcome.body)
    console.print(f"receipt: {outcome.path} ({outcome.status})")
    if outcome.status == "interrupted":
        raise typer.Exit(130)
    if outcome.status != "ok":
        raise ForkliftError(
            f"bench {outcome.status}: some requests failed or the server went away; receipt {outcome.path}"
        )


@bench_app.command("import")
def import_(
    file: Path = typer.Argument(..., help="a `vllm bench serve --save-result` JSON file"),
    receipts: Path | None = typer.Option(None, "--receipts", help="receipt folder"),
) -> None:
    """Turn a vLLM benchmark result file into a bench receipt, so archives compare with new runs."""
    from forklift.bench.session import import_file

    outcome = import_file(file, receipts_folder(receipts))
    render(outcome.body)
    console.print(f"receipt: {outcome.path} ({outcome.status})")
