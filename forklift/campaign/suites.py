"""The suites a campaign can run: a registry, so quality and canary plug in beside bench and ladder.

A served suite is a plain function `run(endpoint, options) -> status` measured against one
booted setting (the campaign boots, runs every served suite, stops). A booting suite (the
ladder) boots by itself, once per build and setting, and gets the pieces to do so. Options
are a pydantic model per suite, so a typo in campaign.toml is one line naming the key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from forklift.bench.runner import BenchPlan, CellSpec, cell_specs
from forklift.bench.session import record_bench
from forklift.bench.slo import Slo, parse_slo
from forklift.campaign.precision import parse_percent
from forklift.canary import SUITE_RUNNERS
from forklift.engines import DEFAULT_ENGINE
from forklift.errors import UsageError
from forklift.ladder import Burst, parse_axis
from forklift.ladder.run import Engine, run_ladder
from forklift.quality.corpus import corpus_from_config
from forklift.quality.endpoint import Endpoint
from forklift.quality.session import ReadySuite, run_suite
from forklift.receipts.envelope import Labels
from forklift.workload import load_cohort, synthetic_workload
from forklift.workload.lengths import parse_lengths

if TYPE_CHECKING:
    from forklift.bench.runner import BenchPlan


@dataclass(frozen=True)
class ServedSetting:
    """A booted setting, as a served suite sees it: where to send, where to write, what to label."""

    url: str
    model: str
    folder: Path
    setting: str
    labels: Labels  # envelope fields for every receipt (build, setting, aa, pin, ...)
    boot: dict[str, Any]  # the boot body (KV pool and other facts)
    log_path: Path | None = None
    engine: str = DEFAULT_ENGINE
    engine_roots: tuple[Path, ...] = ()  # where the build's engine is installed (quality refuses corpora there)


@dataclass(frozen=True)
class CampaignSuite:
    name: str
    options: type[SuiteOptions]
    run: Callable[..., str]  # served: run(endpoint, options); booting: run(context, options) -> receipt status
    boots: bool = False
    # what run() takes, from the validated options, the distribution's config and the campaign's folder
    prepare: Callable[[Any, Any, Path], Any] | None = None


SUITES: dict[str, CampaignSuite] = {}


def register(suite: CampaignSuite) -> CampaignSuite:
    SUITES[suite.name] = suite
    return suite


def suite(kind: str) -> CampaignSuite:
    if kind not in SUITES:
        raise UsageError(f"suite kind {kind!r}: unknown (known: {', '.join(sorted(SUITES))})")
    return SUITES[kind]


class SuiteOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(default=None, description="shown in the plan; default: the kind")
    settings: list[str] | None = Field(default=None, description="run only on these settings (default: every one)")

    def runs_on(self, setting: str) -> bool:
        return self.settings is None or setting in self.settings


class BenchSuiteOptions(SuiteOptions):
    """As `forklift bench` takes them: one workload (cohort or synthetic) and the cells to measure."""

    cohort: str | None = None
    synthetic: str | None = Field(default=None, description="IN:OUT tokens")
    prompts: int = Field(default=16, ge=1, le=100_000)
    endpoint: Literal["chat", "completions"] = "completions"
    max_tokens: int | None = Field(default=None, ge=1)
    ignore_eos: bool = False
    sampling: str = "default"
    seed: int = 0
    mode: Literal["single", "sweep", "batch"] | None = None
    concurrency: list[Annotated[int, Field(ge=1, le=4096)]] = Field(default_factory=lambda: [1], max_length=64)
    requests: int | None = Field(default=None, ge=1, le=1_000_000)
    runs: int = Field(
        default=4, ge=1, le=1_000, description="kept runs of each cell (compare needs 2+ a side to claim)"
    )
    warmup: int = Field(default=1, ge=0, le=100, description="runs before the kept ones, discarded")
    timeout: float = Field(default=600.0, gt=0)
    target_mde: str | None = Field(
        default=None, description="add boots (whole repeats, within the campaign's budget) until this MDE, e.g. '1%'"
    )
    target_metric: Literal["decode_tps", "tpot", "ttft", "e2e"] = Field(
        default="decode_tps", description="the metric target_mde is held to"
    )
    slo: str | None = Field(
        default=None,
        description="latency bounds in ms, e.g. 'ttft=500,tpot=50': goodput per cell, and over a sweep the "
        "highest load whose p99s meet them (the receipt's slo_capacity, read by the slo_capacity gate)",
    )


def suite_mode(options: BenchSuiteOptions) -> str:
    """The bench mode, as `forklift bench` decides it when none is given."""
    return options.mode or ("single" if options.concurrency == [1] else "sweep")


def suite_cell_specs(options: BenchSuiteOptions) -> tuple[CellSpec, ...]:
    """The cells a bench suite measures, named as its receipts carry them."""
    return cell_specs(suite_mode(options), options.concurrency, options.requests, None, 1.0)


def suite_cells(options: BenchSuiteOptions) -> list[str]:
    return [spec.name for spec in suite_cell_specs(options)]


def bench_options(options: BenchSuiteOptions, config: Any, root: Path) -> BenchSuiteOptions:
    """A cohort path in campaign.toml is relative to the campaign file; a target MDE must be a percent."""
    if options.target_mde is not None:
        parse_percent(options.target_mde, "target_mde")
    if options.slo is not None:
        suite_slo(options)
    return options if options.cohort is None else options.model_copy(update={"cohort": str(root / options.cohort)})


def suite_slo(options: BenchSuiteOptions) -> Slo | None:
    """The suite's bounds, or one line naming the bad `slo = ...` (as the campaign file spells it)."""
    if options.slo is None:
        return None
    try:
        return parse_slo(options.slo)
    except UsageError as exc:
        raise UsageError(str(exc).replace("--slo ", "slo = ", 1)) from None


def bench_plan(endpoint: ServedSetting, options: BenchSuiteOptions) -> tuple[BenchPlan, str]:
    """The bench plan for one endpoint."""

    if (options.cohort is None) == (options.synthetic is None):
        raise UsageError("bench suite: give exactly one workload: cohort = FILE.jsonl or synthetic = IN:OUT")
    if options.synthetic is not None:
        inp, out = parse_lengths(options.synthetic, "bench suite: synthetic =")
        workload = synthetic_workload(
            input_tokens=inp,
            output_tokens=out,
            count=options.prompts,
            endpoint=options.endpoint,
            preset=options.sampling,
            seed=options.seed,
        )
    else:
        workload = load_cohort(
            Path(str(options.cohort)),
            max_tokens=options.max_tokens,
            ignore_eos=options.ignore_eos,
            preset=options.sampling,
            seed=options.seed,
        )
    mode = suite_mode(options)
    return BenchPlan(
        url=endpoint.url,
        model=endpoint.model,
        workload=workload,
        cells=suite_cell_specs(options),
        runs=options.runs,
        warmup=options.warmup,
        timeout=options.timeout,
        seed=options.seed,
        slo=suite_slo(options),
    ), mode


def run_bench_suite(endpoint: ServedSetting, options: BenchSuiteOptions) -> str:

    plan, mode = bench_plan(endpoint, options)
    outcome = record_bench(
        plan,
        mode=mode,
        folder=endpoint.folder,
        boot=endpoint.boot,
        labels=endpoint.labels,
    )
    if outcome.status == "interrupted":
        raise KeyboardInterrupt
    return outcome.status


class LadderOptions(SuiteOptions):
    axis: str = Field(description="KEY=V1,V2,... or KEY=START:STOP:STEP")
    requests: int = Field(default=16, ge=1, le=1_000_000)
    concurrency: int = Field(default=4, ge=1, le=4096)
    input_tokens: int = Field(default=128, ge=1)
    output_tokens: int = Field(default=64, ge=1)
    cold: bool = False
    margin: str | None = None
    stop_at_fail: bool = False


@dataclass(frozen=True)
class LadderContext:
    config: Any
    profile: str
    sets: list[str]
    folder: Path
    logs: Path
    python: str | None
    command: list[str] | None
    labels: Labels


def run_ladder_suite(context: LadderContext, options: LadderOptions) -> str:

    burst = Burst(
        requests=options.requests,
        concurrency=options.concurrency,
        input_tokens=options.input_tokens,
        output_tokens=options.output_tokens,
    )
    body, _ = run_ladder(
        context.config,
        context.profile,
        context.sets,
        parse_axis(options.axis),
        burst,
        receipts=context.folder,
        logs=context.logs,
        cold=options.cold,
        margin=options.margin,
        stop_at_fail=options.stop_at_fail,
        engine=Engine(context.python, context.command, context.labels),
    )
    return "ok" if body.highest_pass is not None else "failed"


class QualityOptions(SuiteOptions):
    """A quality or canary suite's own options, as its `forklift quality`/`canary` flags name them."""

    model_config = ConfigDict(extra="allow", frozen=True)


def quality_options(options_class: type) -> Callable[[QualityOptions, Any, Path], Any]:
    """Turn the campaign's keys into the suite's options: a corpus by its [quality.corpora] name, paths from here."""

    def prepare(options: QualityOptions, config: Any, root: Path) -> Any:

        given = dict(options.model_extra or {})
        if "corpus" in given:
            given["corpus"] = corpus_from_config(config, str(given["corpus"]))
        for key in ("data", "log"):
            if isinstance(given.get(key), str):
                given[key] = root / given[key]
        return TypeAdapter(options_class).validate_python(given)

    return prepare


def quality_runner(kind: str, name: str, run: Callable[..., Any]) -> Callable[[ServedSetting, Any], str]:
    """A quality/canary suite run against the campaign's boot, its receipt written by forklift.quality.session."""

    def run_against(endpoint: ServedSetting, options: Any) -> str:

        target = Endpoint(
            url=endpoint.url,
            model=endpoint.model,
            log_path=endpoint.log_path,
            engine=endpoint.engine,
            engine_roots=endpoint.engine_roots,
        )
        outcome = run_suite(
            ReadySuite(kind, name, partial(run, options=options)),
            target,
            endpoint.folder,
            boot=endpoint.boot,
            labels=endpoint.labels,
        )
        return outcome.status

    return run_against


def _register_quality() -> None:

    for name, (kind, run, options_class) in SUITE_RUNNERS.items():
        register(
            CampaignSuite(name, QualityOptions, quality_runner(kind, name, run), prepare=quality_options(options_class))
        )


register(CampaignSuite("bench", BenchSuiteOptions, run_bench_suite, prepare=bench_options))
register(CampaignSuite("ladder", LadderOptions, run_ladder_suite, boots=True))
_register_quality()
