"""`forklift bench`: streaming load against an OpenAI-compatible server, and `bench import`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from forklift.cli.app import MEASURE, App, ReceiptsOption, app, console, load, receipts_dir, say, styled, warn
from forklift.cli.launch import SERVER, ModelOption, ProfileOption, ServerLogsOption, ServerSetsOption, UrlOption
from forklift.cli.progress import BootStatus
from forklift.engines import DEFAULT_ENGINE
from forklift.errors import ForkliftError

if TYPE_CHECKING:
    from forklift.bench.schema import BenchBody, Cell
    from forklift.client.records import RequestRecord

bench_app = App(
    help="Benchmark a server: single stream, concurrency sweep or batch; receipts per run.", no_args_is_help=False
)
app.add_typer(bench_app, name="bench", rich_help_panel=MEASURE)

# Help panels of `forklift bench --help`.
WORKLOAD, LOAD = "Workload", "Load and runs"


class RichProgress:
    """rich progress bars, one task per (cell, run); the bars start with the first cell (after any boot status)."""

    def __init__(self, before: Callable[[], None] | None = None) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        columns = (TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn())
        self.progress = Progress(*columns, TimeElapsedColumn(), console=console, transient=True)
        self.before = before
        self.task: Any = None
        self.started = False

    def __enter__(self) -> RichProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.started:
            self.progress.stop()

    def start(self, cell: str, run: int, total: int) -> None:
        if not self.started:
            if self.before is not None:
                self.before()  # one live display at a time: the boot status ends here
            self.progress.start()
            self.started = True
        self.task = self.progress.add_task(f"{cell} run {run}", total=total)

    def advance(self, record: RequestRecord) -> None:
        if self.task is not None:
            self.progress.advance(self.task)


def _ms(dist: dict[str, float] | None, key: str) -> str:
    return "-" if not dist else f"{dist[key]:.1f}"


def _num(value: object, fmt: str = "{:.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def _server(cell: Cell, role: str) -> str:
    """The engine's own figure beside forklift's: histogram mean (exact) and median (within its bucket)."""
    latency = cell.server_latency
    mean = getattr(latency, f"{role}_mean_ms", None) if latency else None
    if mean is None:
        return "-"
    median, bucket = getattr(latency, f"{role}_ms"), getattr(latency, f"{role}_bucket_ms")
    return f"{mean:.1f} / {median:.1f} in [{bucket[0]:g}, {bucket[1]:g}]"


def _engine_share(cell: Cell) -> str:
    """The engine core's part of a TTFT (means: these histograms' buckets start at 300 ms)."""
    latency = cell.server_latency
    if latency is None or latency.queue_mean_ms is None or latency.prefill_mean_ms is None:
        return "-"
    return f"{latency.queue_mean_ms:.1f} / {latency.prefill_mean_ms:.1f}"


def _steady(cell: Cell) -> str:
    steady = cell.aggregate.get("steady")
    if not steady:
        return "-"
    ramp, drain = steady.get("ramp_tok_s"), steady.get("drain_tok_s")
    return (
        f"{steady['window_tok_s']:.1f} ({steady['requests_inside']} req inside); ramp {_num(ramp)}, drain {_num(drain)}"
    )


def _gpu(cell: Cell) -> str:
    states = [g for facts in cell.run_facts if facts.run in cell.kept_runs for g in (facts.gpus or [])]
    if not states:
        return "-"
    clocks = [g.sm_clock_mhz for g in states if g.sm_clock_mhz is not None]
    reasons = sorted({r for g in states for r in g.throttle_reasons})
    hottest = max((g.temperature_c for g in states if g.temperature_c is not None), default=None)
    shown = f"SM {min(clocks):.0f}-{max(clocks):.0f} MHz" if clocks else "SM -"
    return f"{shown}, {_num(hottest, '{:.0f}')} C" + (f", throttled: {', '.join(reasons)}" if reasons else "")


def _spec(found: dict[str, Any] | None) -> str:
    if not found:
        return "-"
    ci = found["tok_per_step_ci95"]
    shown = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
    return f"{found['tok_per_step_mean']:.2f}{shown} over {found['requests']}"


def _turns(found: dict[str, Any] | None) -> str:
    if not found:
        return "-"
    shares = {turn: "-" if t["reuse"] is None else f"{t['reuse']:.0%}" for turn, t in found.items()}
    return " ".join(f"t{turn} {share}" for turn, share in shares.items())


def _goodput(found: dict[str, Any] | None) -> str:
    if not found:
        return "-"
    rate = f", {found['good_per_s']:.2f} req/s" if found.get("good_per_s") is not None else ""
    return f"{found['good']}/{found['requests']}{rate}"


def _check(cross: dict[str, Any]) -> str | Text:
    if not cross:
        return "-"
    if cross["match"]:
        return "ok"
    return styled(f"{cross['server_generation_tokens']} vs {cross['client_completion_tokens']}", "red")


# (row label, how to read it from a cell): metrics as rows, one column per cell, so a sweep fits.
ROWS = (
    ("requests ok/n", lambda c: f"{c.aggregate.get('ok', 0)}/{c.aggregate.get('requests', 0)}"),
    ("failures", lambda c: ", ".join(f"{k} {v}" for k, v in c.aggregate.get("failures", {}).items()) or "-"),
    ("output tokens", lambda c: str(c.aggregate.get("output_tokens", "-"))),
    ("duration s", lambda c: _num(c.duration_s, "{:.2f}")),
    (
        "TTFT ms median / p99",
        lambda c: (
            f"{_ms(c.aggregate.get('ttft_ms'), 'median')} / {_ms(c.aggregate.get('ttft_ms'), 'p99')}"
            + (" (bursts)" if c.aggregate.get("burst_requests") else "")
        ),
    ),
    ("burst-delivered requests", lambda c: str(c.aggregate.get("burst_requests", "-"))),
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
    ("vLLM TTFT ms mean / median", lambda c: _server(c, "ttft")),
    ("vLLM TPOT ms mean / median", lambda c: _server(c, "tpot")),
    ("vLLM E2E ms mean / median", lambda c: _server(c, "e2e")),
    ("vLLM queue / prefill ms mean", _engine_share),
    ("steady window tok/s", _steady),
    ("GPU (kept runs)", _gpu),
    ("per-stream decode tok/s", lambda c: _num(c.aggregate.get("per_stream_decode_tok_s"))),
    ("aggregate decode tok/s", lambda c: _num(c.aggregate.get("aggregate_decode_tok_s"))),
    ("e2e tok/s", lambda c: _num(c.aggregate.get("e2e_tok_s"))),
    ("goodput (within --slo)", lambda c: _goodput(c.aggregate.get("goodput"))),
    ("prefix reuse by turn", lambda c: _turns(c.aggregate.get("turns"))),
    ("tok/step (spec decode)", lambda c: _num(c.metrics_delta.get("tok_per_step"), "{:.2f}")),
    ("tok/step per request, 95% CI", lambda c: _spec(c.aggregate.get("spec_per_request"))),
    ("prefix cache hits", lambda c: _num(c.metrics_delta.get("prefix_cache_hits"), "{:.0f}")),
    ("preemptions", lambda c: _num(c.metrics_delta.get("preemptions"), "{:.0f}")),
    ("KV pool tokens", lambda c: _num(c.aggregate.get("kv_pool_tokens"), "{:,}")),
    ("gen tokens server=client", lambda c: _check(c.cross_check)),
)


def render(body: BenchBody) -> None:
    from rich.table import Table

    table = Table(title=f"forklift bench: {body.model} @ {body.url} ({body.workload.name})", title_justify="left")
    table.add_column("")
    for cell in body.cells:
        table.add_column(f"{cell.name} (C{cell.concurrency})", justify="right")
    for label, read in ROWS:
        table.add_row(label, *(read(cell) for cell in body.cells))
    console.print(table)
    if body.server_info:
        say("server: " + ", ".join(f"{k}={v}" for k, v in body.server_info.items()))
    say(
        "aggregate decode = C x 1000 / median TPOT (ms); statistics over the kept runs only; "
        "TPOT/ITL/decode over timed requests (burst-delivered ones measured delivery, not decoding) that lay "
        "inside their run's steady window (all C in flight); vLLM's figures: its histograms' delta over the kept "
        "runs, mean exact, median interpolated within the bucket shown (its TTFT starts when its frontend "
        "received the request)"
    )
    from forklift.bench.metrics import cache_reuse

    for warning in cache_reuse(body):
        warn(warning)
    if body.slo_capacity:
        say(capacity_line(body.slo_capacity))


def capacity_line(found: dict[str, Any]) -> str:
    """The sweep against --slo in one line: the highest cell whose p99s meet every bound, and each verdict."""
    bounds = ", ".join(f"{name} {bound:g} ms" for name, bound in found["bounds_ms"].items())
    cells = "; ".join(
        f"{row['cell']} {row['verdict']}"
        + "".join(f" ({name} p99 {p:.0f} [{lo:.0f}, {hi:.0f}])" for name, (p, lo, hi) in row["p99_ms"].items())
        for row in found["cells"]
    )
    return f"SLO (p99 within {bounds}, 95% order-statistic interval): highest {found['highest'] or 'none'}; {cells}"


@bench_app.callback(invoke_without_command=True)
def bench(
    ctx: typer.Context,
    url: UrlOption = None,
    profile: ProfileOption = None,
    sets: ServerSetsOption = None,
    logs: ServerLogsOption = None,
    model: ModelOption = None,
    engine: Annotated[
        str, typer.Option("--engine", help="engine adapter naming the server's metrics", rich_help_panel=SERVER)
    ] = DEFAULT_ENGINE,
    cohort: Annotated[
        Path | None,
        typer.Option("--cohort", help="prompt cohort, JSONL: id, messages or prompt, ...", rich_help_panel=WORKLOAD),
    ] = None,
    synthetic: Annotated[
        str | None,
        typer.Option(
            "--synthetic", metavar="IN:OUT", help="synthetic prompts of exact lengths", rich_help_panel=WORKLOAD
        ),
    ] = None,
    prompts: Annotated[
        int, typer.Option("--prompts", help="how many distinct synthetic prompts", rich_help_panel=WORKLOAD)
    ] = 16,
    endpoint: Annotated[
        str, typer.Option("--endpoint", help="synthetic prompts: chat or completions", rich_help_panel=WORKLOAD)
    ] = "completions",
    max_tokens: Annotated[
        int | None,
        typer.Option("--max-tokens", help="cohort default for lines without one", rich_help_panel=WORKLOAD),
    ] = None,
    ignore_eos: Annotated[
        bool,
        typer.Option(
            "--ignore-eos", help="cohort: generate exactly max_tokens (synthetic always does)", rich_help_panel=WORKLOAD
        ),
    ] = False,
    sampling: Annotated[
        str, typer.Option("--sampling", help="default (model's), greedy or seeded", rich_help_panel=WORKLOAD)
    ] = "default",
    seed: Annotated[
        int,
        typer.Option(
            "--seed", help="base seed of the seeded preset, synthetic text and pacing", rich_help_panel=WORKLOAD
        ),
    ] = 0,
    no_salt: Annotated[
        bool,
        typer.Option("--no-salt", help="send prompts as they are: allow prefix-cache reuse", rich_help_panel=WORKLOAD),
    ] = False,
    salt_nonce: Annotated[
        str,
        typer.Option("--salt-nonce", help="change to re-bench a live server off its cache", rich_help_panel=WORKLOAD),
    ] = "forklift",
    conversations: Annotated[
        int | None,
        typer.Option(
            "--conversations",
            help="multi-turn: this many conversations, each answer fed back (--synthetic WORDS:TOKENS a turn)",
            rich_help_panel=WORKLOAD,
        ),
    ] = None,
    turns: Annotated[
        int, typer.Option("--turns", help="multi-turn: turns of each conversation", rich_help_panel=WORKLOAD)
    ] = 2,
    interleave: Annotated[
        str,
        typer.Option(
            "--interleave",
            help="multi-turn: alternating (one request in flight, per-turn prefix reuse) or concurrent",
            rich_help_panel=WORKLOAD,
        ),
    ] = "alternating",
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode", help="single, sweep or batch (default: sweep when --concurrency is given)", rich_help_panel=LOAD
        ),
    ] = None,
    concurrency: Annotated[
        str | None, typer.Option("--concurrency", metavar="C,C,...", help="e.g. 1,2,4,8", rich_help_panel=LOAD)
    ] = None,
    requests: Annotated[
        int | None,
        typer.Option("--requests", help="requests per cell (default: the workload once)", rich_help_panel=LOAD),
    ] = None,
    rate: Annotated[
        float | None, typer.Option("--rate", help="pace arrivals at this many requests/s", rich_help_panel=LOAD)
    ] = None,
    burstiness: Annotated[
        float, typer.Option("--burstiness", help="gamma shape of arrival gaps (1 = Poisson)", rich_help_panel=LOAD)
    ] = 1.0,
    runs: Annotated[
        int,
        typer.Option(
            "--runs", help="kept runs of each cell (compare needs 2+ a side to claim anything)", rich_help_panel=LOAD
        ),
    ] = 4,
    warmup: Annotated[
        int,
        typer.Option(
            "--warmup", help="runs before the kept ones, discarded (a cold server reads low)", rich_help_panel=LOAD
        ),
    ] = 1,
    timeout: Annotated[float, typer.Option("--timeout", help="seconds per request", rich_help_panel=LOAD)] = 600.0,
    slo: Annotated[
        str | None,
        typer.Option(
            "--slo",
            metavar="ttft=MS,tpot=MS,e2e=MS",
            help="latency bounds: each cell counts the requests that met all of them (goodput)",
            rich_help_panel=LOAD,
        ),
    ] = None,
    label: Annotated[
        str | None, typer.Option("--label", help="your name for what is benched, shown by compare")
    ] = None,
    receipts: ReceiptsOption = None,
    build: Annotated[
        str | None,
        typer.Option("--build", help="label the receipts with this build (default: engine version + overlay hash)"),
    ] = None,
) -> None:
    """Stream a workload at a server; prints a table and writes a bench receipt with every request."""
    if ctx.invoked_subcommand is not None:
        return
    from forklift.bench.options import BenchOptions
    from forklift.bench.session import bench_launched, record_bench
    from forklift.receipts.envelope import Labels

    options = BenchOptions(
        url=url,
        profile=profile,
        sets=sets or [],
        model=model,
        cohort=cohort,
        synthetic=synthetic,
        prompts=prompts,
        endpoint=endpoint,
        max_tokens=max_tokens,
        ignore_eos=ignore_eos,
        sampling=sampling,
        seed=seed,
        no_salt=no_salt,
        salt_nonce=salt_nonce,
        mode=mode,
        concurrency=concurrency,
        requests=requests,
        rate=rate,
        burstiness=burstiness,
        runs=runs,
        warmup=warmup,
        timeout=timeout,
        engine=engine,
        slo=slo,
        conversations=conversations,
        turns=turns,
        interleave=interleave,
    )
    make_plan = options.plan()
    folder = receipts_dir(receipts)
    # A boot status shows only while a --profile boots; the bars replace it (with --url it never starts).
    with BootStatus(console, profile or "") as status, RichProgress(before=status.stop) as progress:
        if profile is not None:
            config = load()
            outcome = bench_launched(
                config,
                profile,
                options.sets,
                make_plan,
                mode=options.bench_mode,
                folder=folder,
                logs=logs or config.root / "logs",
                progress=progress,
                on_start=status.on_start,
                on_poll=status.on_poll,
                label=label,
                build=build,
            )
        else:
            assert url is not None  # BenchOptions saw exactly one server
            outcome = record_bench(
                make_plan(url),
                mode=options.bench_mode,
                folder=folder,
                progress=progress,
                label=label,
                labels=Labels(build=build) if build else None,
            )
    render(outcome.body)
    say(f"receipt: {outcome.path} ({outcome.status})")
    if outcome.status == "interrupted":
        raise KeyboardInterrupt  # the entry point says what was kept and exits 130
    if outcome.status != "ok":
        raise ForkliftError(
            f"bench {outcome.status}: some requests failed or the server went away; receipt {outcome.path}"
        )


@bench_app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="a `vllm bench serve --save-result` JSON file")],
    receipts: ReceiptsOption = None,
) -> None:
    """Turn a vLLM benchmark result file into a bench receipt, so archives compare with new runs."""
    from forklift.bench.session import import_file

    outcome = import_file(file, receipts_dir(receipts))
    render(outcome.body)
    say(f"receipt: {outcome.path} ({outcome.status})")
