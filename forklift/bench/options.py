"""The options of `forklift bench`, checked once as a model: what to bench, with what workload, how.

The CLI only collects the flags; every rule between them lives here, so a bad combination is refused
with one line naming the flag before anything is launched or sent.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from forklift.bench.slo import parse_slo
from forklift.engines import DEFAULT_ENGINE
from forklift.errors import UsageError
from forklift.workload.lengths import Span, parse_lengths

if TYPE_CHECKING:
    from forklift.bench.runner import BenchPlan
    from forklift.workload.items import Workload


class BenchOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str | None = None
    profile: str | None = None
    sets: list[str] = []
    model: str | None = None
    cohort: Path | None = None
    synthetic: str | None = None
    prompts: int = 16
    endpoint: str = "completions"
    max_tokens: int | None = None
    ignore_eos: bool = False
    sampling: str = "default"
    seed: int = 0
    no_salt: bool = False
    salt_nonce: str = "forklift"
    mode: str | None = None
    concurrency: str | None = None
    requests: int | None = None
    rate: float | None = None
    burstiness: float = 1.0
    runs: int = 4
    warmup: int = 1
    timeout: float = 600.0
    engine: str = DEFAULT_ENGINE
    slo: str | None = None
    conversations: int | None = None
    turns: int = 2
    interleave: str = "alternating"

    @model_validator(mode="after")
    def _one_server_one_workload(self) -> BenchOptions:
        if (self.url is None) == (self.profile is None):
            raise UsageError("give one server: --url URL of a running server, or --profile NAME to launch")
        if self.sets and self.profile is None:
            raise UsageError("--set needs --profile (it changes what is launched)")
        if (self.cohort is None) == (self.synthetic is None):
            raise UsageError("give exactly one workload: --cohort FILE.jsonl or --synthetic IN:OUT")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise UsageError(f"--url {self.url!r}: expected http://HOST:PORT or https://HOST:PORT")
        if self.endpoint not in ("chat", "completions"):
            raise UsageError(f"--endpoint {self.endpoint!r}: expected chat or completions")
        self.levels()  # a bad --concurrency or --synthetic is named now, not after a launch
        if self.synthetic is not None:
            self.synthetic_lengths()
        if self.slo is not None:
            parse_slo(self.slo)
        if self.conversations is not None:
            given: dict[str, object] = {"--cohort": self.cohort, "--concurrency": self.concurrency}
            given |= {"--requests": self.requests, "--rate": self.rate, "--mode": self.mode}
            clash = next((flag for flag, value in given.items() if value is not None), None)
            if self.synthetic is None or clash:
                raise UsageError(
                    f"--conversations takes --synthetic IN:OUT (words a user turn, tokens an answer)"
                    f"{f', not {clash}' if clash else ''}: --interleave sets how they are sent"
                )
            self.workload()  # a bad count, turns or interleave is named now
        return self

    def levels(self) -> list[int]:
        """The concurrency levels as given; whether they make a bench is cell_specs' to say."""
        if self.concurrency is None:
            return [1]
        try:
            return [int(part) for part in self.concurrency.split(",") if part.strip()]
        except ValueError:
            raise UsageError(
                f"--concurrency {self.concurrency!r}: expected a comma-separated list of integers, e.g. 1,2,4"
            ) from None

    def synthetic_lengths(self) -> tuple[Span, Span]:
        return parse_lengths(self.synthetic or "", "--synthetic")

    @property
    def bench_mode(self) -> str:
        return self.mode or ("sweep" if self.concurrency else "single")

    def workload(self) -> Workload:
        # local: the workload loaders pull aiohttp and pydantic (~200 ms); only a bench run needs them
        from forklift.workload import load_cohort, synthetic_workload
        from forklift.workload.conversation import conversation_workload

        if self.conversations is not None:
            (words, most_words), (out, most_out) = self.synthetic_lengths()
            if (words, out) != (most_words, most_out):
                raise UsageError(
                    f"--synthetic {self.synthetic!r}: a conversation's turns take fixed lengths, not ranges"
                )
            return conversation_workload(
                conversations=self.conversations,
                turns=self.turns,
                user_words=words,
                output_tokens=out,
                interleave=self.interleave,
                preset=self.sampling,
                seed=self.seed,
                salt_nonce=self.salt_nonce,
            )
        if self.synthetic is not None:
            inputs, outputs = self.synthetic_lengths()
            endpoint: Literal["chat", "completions"] = "chat" if self.endpoint == "chat" else "completions"
            return synthetic_workload(
                input_tokens=inputs,
                output_tokens=outputs,
                count=self.prompts,
                endpoint=endpoint,
                preset=self.sampling,
                seed=self.seed,
                salted=not self.no_salt,
                salt_nonce=self.salt_nonce,
            )
        assert self.cohort is not None  # the validator saw exactly one workload
        return load_cohort(
            self.cohort,
            max_tokens=self.max_tokens,
            ignore_eos=self.ignore_eos,
            preset=self.sampling,
            seed=self.seed,
            salted=not self.no_salt,
            salt_nonce=self.salt_nonce,
        )

    def plan(self) -> PlanMaker:
        """The bench plan with everything but the server: built now, so bad options stop before a launch."""
        # local: bench.runner pulls aiohttp and numpy (~400 ms); parsing options needs neither
        from forklift.bench.runner import BenchPlan, cell_specs

        template = BenchPlan(
            url="",
            model="",
            workload=self.workload(),
            cells=cell_specs(self.bench_mode, self.levels(), self.requests, self.rate, self.burstiness),
            runs=self.runs,
            warmup=self.warmup,
            timeout=self.timeout,
            engine=self.engine,
            seed=self.seed,
            slo=parse_slo(self.slo) if self.slo is not None else None,
        )
        return PlanMaker(template, self.model)


class PlanMaker:
    """Completes the plan once the server is known: its URL, and the model (given, served, or discovered)."""

    def __init__(self, template: BenchPlan, model: str | None) -> None:
        self.template = template
        self.model = model

    def __call__(self, base_url: str, served: str | None = None) -> BenchPlan:
        # local: bench.session pulls aiohttp, httpx, numpy and rich (~600 ms); only a launched bench needs it
        from forklift.bench.session import discover_model

        return replace(self.template, url=base_url.rstrip("/"), model=self.model or served or discover_model(base_url))
