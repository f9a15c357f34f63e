"""Run a bench: cells (single stream, concurrency sweep, batch), repeated runs, pacing, scrapes.

Each cell: for every run, prepare the requests (fresh salt per run), scrape /metrics,
send them at the cell's concurrency (optionally paced by a Poisson/gamma arrival
process), scrape again. Statistics use the kept runs only (the warm-up is dropped by
default); every record of every run stays in the receipt. A server that stops
accepting connections ends the bench: the receipt is then partial, never silently short.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from forklift.bench.aggregate import aggregate, run_duration
from forklift.bench.conversations import send_conversations
from forklift.bench.gpu import GpuSampler
from forklift.bench.histograms import Buckets, add, run_histograms, server_latency
from forklift.bench.metrics import (
    add_deltas,
    counter_deltas,
    derive,
    metric_names,
    scrape,
    server_info,
    server_version,
)
from forklift.bench.recorder import BenchRecorder
from forklift.bench.schema import Cell, RunFacts
from forklift.bench.slo import Slo, capacity
from forklift.bench.steady import steady_window
from forklift.client.records import UNREACHABLE, RequestRecord
from forklift.client.stream import PreparedRequest, StreamClient
from forklift.engines import DEFAULT_ENGINE
from forklift.errors import UsageError
from forklift.receipts.envelope import Status
from forklift.workload import Workload, prepare


@dataclass(frozen=True)
class CellSpec:
    name: str
    concurrency: int
    requests: int | None = None  # None: the workload's prompts once
    rate: float | None = None  # requests per second; None: as fast as the concurrency allows
    burstiness: float = 1.0  # gamma shape of the arrival gaps; 1.0 is Poisson


@dataclass(frozen=True)
class BenchPlan:
    url: str
    model: str
    workload: Workload
    cells: tuple[CellSpec, ...]
    # Kept runs after the discarded warm-up: a cold server reads 30-50 % low on its first run,
    # and with several kept runs compare's interval includes run-to-run variation of the box.
    runs: int = 4
    warmup: int = 1
    timeout: float = 600.0
    engine: str = DEFAULT_ENGINE
    seed: int = 0  # of the pacing process
    api_key: str | None = field(default=None, repr=False)  # the launched profile's --api-key, sent, never written
    slo: Slo | None = None  # latency bounds: each cell counts its goodput

    def __post_init__(self) -> None:
        # With cell_specs, the one check of the bench options (named as the CLI spells them).
        if not self.cells:
            raise UsageError("a bench needs at least one cell")
        if self.runs < 1:
            raise UsageError(f"--runs {self.runs}: must be >= 1")
        if self.warmup < 0:
            raise UsageError(f"--warmup {self.warmup}: must be >= 0")
        if self.timeout <= 0:
            raise UsageError(f"--timeout {self.timeout}: must be > 0 seconds")

    @property
    def total_runs(self) -> int:
        return self.warmup + self.runs

    def kept_runs(self) -> list[int]:
        return list(range(self.warmup, self.total_runs))


class Progress(Protocol):
    def start(self, cell: str, run: int, total: int) -> None: ...
    def advance(self, record: RequestRecord) -> None: ...


class _Silent:
    def start(self, cell: str, run: int, total: int) -> None:
        pass

    def advance(self, record: RequestRecord) -> None:
        pass


def cell_specs(
    mode: str, concurrencies: list[int], requests: int | None, rate: float | None, burstiness: float
) -> tuple[CellSpec, ...]:
    """The cells a mode measures: single = C1 over the cohort; sweep = one cell per C; batch = N at C."""
    if not concurrencies:
        raise UsageError("--concurrency: give at least one level, e.g. 1,2,4")
    if any(c < 1 for c in concurrencies):
        raise UsageError(f"--concurrency {','.join(map(str, concurrencies))}: every value must be >= 1")
    if requests is not None and requests < 1:
        raise UsageError(f"--requests {requests}: must be >= 1")
    if rate is not None and rate <= 0:
        raise UsageError(f"--rate {rate}: must be > 0 requests per second")
    if burstiness <= 0:
        raise UsageError(f"--burstiness {burstiness}: must be > 0")
    if mode == "single":
        return (CellSpec("single", 1, requests, rate, burstiness),)
    if mode == "sweep":
        return tuple(CellSpec(f"c{c}", c, requests, rate, burstiness) for c in concurrencies)
    if mode == "batch":
        if len(concurrencies) != 1 or requests is None:
            raise UsageError("--mode batch needs one --concurrency C and --requests N")
        c = concurrencies[0]
        return (CellSpec(f"batch-n{requests}-c{c}", c, requests, rate, burstiness),)
    raise UsageError(f"--mode {mode!r}: expected single, sweep or batch")


async def send_all(
    client: StreamClient,
    requests: list[PreparedRequest],
    spec: CellSpec,
    *,
    run: int,
    zero: float,
    recorder: BenchRecorder,
    cell: Cell,
    progress: Progress,
    rng: np.random.Generator,
) -> bool:
    """Send one run's requests at the cell's concurrency; True when the server became unreachable."""
    slots = asyncio.Semaphore(spec.concurrency)
    unreachable = asyncio.Event()
    tasks: set[asyncio.Task[None]] = set()

    async def one(request: PreparedRequest) -> None:
        record = RequestRecord(prompt_id=request.prompt_id, run=run, send=time.perf_counter() - zero)
        try:
            await client.fill(record, request, zero)
        finally:  # on cancellation too: an interrupted request is still recorded
            recorder.add(cell, record)
            progress.advance(record)
            slots.release()
        if record.error_kind in UNREACHABLE:
            unreachable.set()

    try:
        for index, request in enumerate(requests):
            if spec.rate and index:
                await asyncio.sleep(rng.gamma(spec.burstiness, 1.0 / (spec.rate * spec.burstiness)))
            await slots.acquire()
            if unreachable.is_set():
                break
            tasks.add(asyncio.create_task(one(request)))
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return unreachable.is_set()


def cross_check(metrics: dict[str, Any], records: list[RequestRecord]) -> dict[str, Any]:
    """Server generation-token delta vs the completion tokens the client saw (equal when alone on the server)."""
    server = metrics.get("generation_tokens")
    if server is None:
        return {}
    client_tokens = int(sum(r.completion_tokens or 0 for r in records))
    out = {
        "server_generation_tokens": server,
        "client_completion_tokens": client_tokens,
        "match": server == client_tokens,
    }
    if not out["match"]:
        out["note"] = (
            "mismatch: another client shared the server, a failed request's tokens never reached us, "
            "or the server counts differently"
        )
    return out


def run_facts(
    records: list[RequestRecord], spec: CellSpec, run: int, hists: dict[str, Buckets], sampler: GpuSampler
) -> RunFacts:
    """One run's window, GPU state and server latencies (a paced cell is an open loop: no steady window)."""
    ends = [r.end for r in records if r.end is not None]
    return RunFacts(
        run=run,
        start_s=min((r.send for r in records), default=None),
        end_s=max(ends, default=None),
        steady=None if spec.rate else steady_window(records, spec.concurrency),
        gpus=sampler.states(),
        server=server_latency(hists),
    )


def finish_cell(
    cell: Cell,
    raw: dict[str, Any] | None,
    durations: list[float],
    hists: dict[str, Buckets] | None = None,
    slo: Slo | None = None,
) -> None:
    kept = [r for r in cell.requests if r.run in cell.kept_runs]
    cell.duration_s = sum(durations) if durations else None
    windows = {f.run: f.steady for f in cell.run_facts if f.run in cell.kept_runs}
    cell.aggregate = aggregate(kept, concurrency=cell.concurrency, duration_s=cell.duration_s, windows=windows, slo=slo)
    cell.server_latency = server_latency(hists) if hists else None
    cell.metrics_delta = derive(raw) if raw is not None else {}
    cell.cross_check = cross_check(cell.metrics_delta, kept)


def status_of(cells: list[Cell]) -> Status:
    records = [r for cell in cells for r in cell.requests]
    if not any(r.ok for r in records):
        return "failed"
    if all(cell.complete for cell in cells) and all(r.ok for r in records):
        return "ok"
    return "partial"


async def run_bench(plan: BenchPlan, recorder: BenchRecorder, progress: Progress | None = None) -> Status:
    """Measure every cell of the plan into the recorder's receipt; returns the receipt status."""
    progress = progress or _Silent()
    names = metric_names(plan.engine)
    rng = np.random.default_rng(plan.seed)
    connections = max(spec.concurrency for spec in plan.cells)
    async with StreamClient(plan.url, timeout=plan.timeout, connections=connections, api_key=plan.api_key) as client:
        recorder.body.server_info = server_info(await scrape(client.session, plan.url), names)
        if recorder.receipt.engine_version is None:  # a --url bench: the server says what it runs
            recorder.receipt.engine_version = await server_version(client.session, plan.url)
        for spec in plan.cells:
            cell = Cell(
                name=spec.name,
                concurrency=spec.concurrency,
                request_rate=spec.rate,
                runs=plan.total_runs,
                kept_runs=plan.kept_runs(),
                complete=False,
            )
            recorder.body.cells.append(cell)
            zero = time.perf_counter()
            raw: dict[str, Any] | None = {}
            hists: dict[str, Buckets] = {}
            durations: list[float] = []
            unreachable = False
            try:
                for run in range(plan.total_runs):
                    conversations = plan.workload.interleave is not None
                    requests = (
                        []
                        if conversations
                        else await prepare(
                            plan.workload,
                            model=plan.model,
                            cell=spec.name,
                            run=run,
                            count=spec.requests,
                            session=client.session,
                            base_url=plan.url,
                        )
                    )
                    progress.start(spec.name, run, len(plan.workload.items) if conversations else len(requests))
                    before = await scrape(client.session, plan.url)
                    async with GpuSampler() as sampler:
                        if conversations:
                            unreachable = await send_conversations(
                                client,
                                plan.workload,
                                model=plan.model,
                                cell_name=spec.name,
                                run=run,
                                zero=zero,
                                recorder=recorder,
                                cell=cell,
                                advance=progress.advance,
                                names=names,
                            )
                        else:
                            unreachable = await send_all(
                                client,
                                requests,
                                spec,
                                run=run,
                                zero=zero,
                                recorder=recorder,
                                cell=cell,
                                progress=progress,
                                rng=rng,
                            )
                    after = None if unreachable else await scrape(client.session, plan.url)
                    moved = run_histograms(before, after, names) if before and after else {}
                    records = [r for r in cell.requests if r.run == run]
                    cell.run_facts.append(run_facts(records, spec, run, moved, sampler))
                    if run in cell.kept_runs:
                        for role, hist in moved.items():
                            hists[role] = add(hists.get(role, {}), hist)
                        if raw is not None and before is not None and after is not None:
                            raw = add_deltas(raw, counter_deltas(before, after, names))
                        else:
                            raw = None  # a missing scrape makes the deltas unknown, not zero
                        duration = run_duration(records)
                        if duration is not None:
                            durations.append(duration)
                    if unreachable:
                        break
                cell.complete = not unreachable
            finally:
                finish_cell(cell, raw if cell.complete else None, durations, hists, plan.slo)
                recorder.flush()
            if unreachable:
                break
    if plan.slo is not None:
        recorder.body.slo_capacity = capacity(recorder.body.cells, plan.slo)
        recorder.flush()
    return status_of(recorder.body.cells)
