"""Synthetic bench receipts with known answers, built through the real schemas (new_receipt + BenchBody).

Each prompt has a base speed; a side multiplies it by a planted factor and
per-request noise, so the true relative change is known exactly.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np

from forklift.bench.schema import BenchBody, Cell
from forklift.client.records import RequestRecord
from forklift.receipts import Receipt, new_receipt, write_receipt
from forklift.stats.sample import BenchRun
from forklift.workload.items import WorkloadIdentity

GREEDY = {"preset": "greedy", "temperature": 0.0}


def workload(**changes) -> WorkloadIdentity:
    # unsalted by default: every run sends the same text, so equal hashes across runs mean "deterministic"
    fields = dict(name="cohort", hash="w" * 64, corpus_hash="c" * 64, sampling=GREEDY, max_tokens=64, salted=False)
    return WorkloadIdentity(**{**fields, **changes})


def records(
    prompts: int,
    *,
    speed: float = 1.0,
    noise: float = 0.05,
    seed: int = 0,
    runs: int = 2,
    text: str = "same",
    tokens: int = 64,
    prefix: str = "p",
    tok_step: float | None = None,
    run_speed: list[float] | None = None,
) -> list[RequestRecord]:
    """`runs` runs over `prompts` prompts; decode is `speed` times the per-prompt base, with lognormal noise.

    `run_speed` multiplies every request of a run: the state of the box during that run (drift).
    """
    base = np.random.default_rng(12345).uniform(0.02, 0.06, prompts)  # per-prompt TPOT, shared by both sides
    rng = np.random.default_rng(seed)
    out = []
    for run in range(runs):
        clock = 0.0
        box = run_speed[run] if run_speed else 1.0
        for i in range(prompts):
            tpot = base[i] / speed / box * rng.lognormal(0, noise)
            ttft = 0.1 * base[i] / 0.04 / speed / box * rng.lognormal(0, noise)
            first = clock + ttft
            end = first + tpot * (tokens - 1)
            out.append(
                RequestRecord(
                    prompt_id=f"{prefix}{i}",
                    run=run,
                    send=clock,
                    first_token=first,
                    end=end,
                    chunks=[(first, 1), (end, tokens - 1)],
                    prompt_tokens=20,
                    completion_tokens=tokens,
                    tokens_from="usage",
                    finish_reason="length",
                    status=200,
                    output_sha256=hashlib.sha256(f"{text}-{i}".encode()).hexdigest(),
                    spec=None if tok_step is None else {"tok_step": tok_step * float(rng.lognormal(0, noise))},
                )
            )
            clock = end
    return out


SLO_SIGMA = 0.2
Z99 = 2.3263  # the standard normal's 99th percentile


def p99_latencies(p99_ms: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """`n` lognormal latencies in seconds (right-skewed, as a cell's TTFT is; sigma 0.2) whose true p99 is set."""
    return rng.lognormal(math.log(p99_ms / 1000) - Z99 * SLO_SIGMA, SLO_SIGMA, n)


def slo_cell(
    name: str, concurrency: int, p99_ms: float, rng: np.random.Generator, n: int = 600, failed: int = 0
) -> Cell:
    """A kept run of `n` requests whose true TTFT p99 is `p99_ms`, and `failed` requests that got no answer."""
    requests = [
        RequestRecord(prompt_id=f"p{i}", run=1, send=0.0, first_token=t, end=t + 1.0, chunks=[(t, 1), (t + 1.0, 1)])
        for i, t in enumerate(p99_latencies(p99_ms, n, rng))
    ]
    requests += [RequestRecord(prompt_id=f"f{i}", run=1, send=0.0, error_kind="http") for i in range(failed)]
    return Cell(name=name, concurrency=concurrency, runs=2, kept_runs=[1], requests=requests, complete=True)


def delivered_in_burst(record: RequestRecord, wait: float = 2.0) -> RequestRecord:
    """`record` as a server frontend that fell behind its engine delivers it: held, then sent whole at `wait` times
    its E2E after the send (TTFT = E2E), every chunk read at one instant (RequestRecord.delivered_in_burst)."""
    assert record.end is not None and record.completion_tokens is not None
    end = record.send + wait * (record.end - record.send)
    chunks = [(end, 1)] * record.completion_tokens  # a token a chunk, as vLLM streams them
    return record.model_copy(update={"first_token": end, "end": end, "chunks": chunks})


def bench_receipt(
    cells: dict[str, list[RequestRecord]],
    *,
    setting: str = "plain",
    engine_version: str = "0.32.0",
    overlay_hash: str | None = None,
    ident: WorkloadIdentity | None = None,
    machine: str | None = None,
    concurrency: dict[str, int] | None = None,
    metrics_delta: dict[str, dict] | None = None,
    kept: list[int] | None = None,
    boot: str | None = None,
) -> Receipt:
    """`boot`: the server boot benched (BenchBody.boot_id); None leaves it unrecorded (a boot per receipt)."""
    body = BenchBody(
        boot_id=boot,
        url="http://127.0.0.1:8000",
        model="tiny",
        mode="sweep",
        workload=ident or workload(),
        cells=[
            Cell(
                name=name,
                concurrency=(concurrency or {}).get(name, 1),
                runs=2,
                kept_runs=[1] if kept is None else kept,
                requests=reqs,
                metrics_delta=(metrics_delta or {}).get(name, {}),
            )
            for name, reqs in cells.items()
        ],
    )
    receipt = new_receipt(
        "bench",
        engine_version=engine_version,
        overlay_hash=overlay_hash,
        setting=setting,
        profile={"name": setting},
        body=body.model_dump(mode="json"),
    )
    if machine:
        receipt = receipt.model_copy(
            update={"fingerprint": receipt.fingerprint.model_copy(update={"machine_id": machine, "hostname": machine})}
        )
    return receipt


def as_run(receipt: Receipt, path: str = "r.json") -> BenchRun:
    return BenchRun(Path(path), receipt, BenchBody.model_validate(receipt.body))


def written(receipt: Receipt, folder: Path) -> Path:
    return write_receipt(receipt, folder)
