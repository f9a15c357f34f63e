"""One `forklift bench` from plan to receipt: find the model, run, stop cleanly on Ctrl-C.

The receipt exists from the first moment (status partial) and grows with every request;
whatever ends the bench (done, dead server, Ctrl-C) the file on disk holds every
completed record and says how it ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib.metadata import version
from pathlib import Path
from typing import Any

import aiohttp

from forklift.bench.importer import import_vllm_result
from forklift.bench.recorder import BenchRecorder
from forklift.bench.runner import BenchPlan, Progress, run_bench
from forklift.bench.schema import BenchBody
from forklift.config import Config
from forklift.errors import ForkliftError
from forklift.launch.boot import profile_record
from forklift.launch.plan import make_launch_plan
from forklift.launch.session import launched
from forklift.launch.supervise import OnPoll, Server
from forklift.receipts import new_receipt, write_receipt
from forklift.receipts.envelope import Labels, Status


@dataclass
class BenchOutcome:
    status: Status
    path: Path
    body: BenchBody


async def _first_model(url: str) -> str:
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session,
            session.get(url.rstrip("/") + "/v1/models") as response,
        ):
            if response.status != 200:
                raise ForkliftError(f"{url}/v1/models answered HTTP {response.status}; give --model")
            listing = await response.json()
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as exc:
        raise ForkliftError(f"{url}: cannot list models ({type(exc).__name__}: {exc}); is the server up?") from None
    if isinstance(listing, dict) and not listing.get("data"):
        raise ForkliftError(f"{url}/v1/models lists no model; give --model")
    data = listing.get("data") if isinstance(listing, dict) else None
    first = data[0] if isinstance(data, list) else None
    if not isinstance(first, dict) or "id" not in first:
        raise ForkliftError(f"{url}/v1/models is not an OpenAI model list ({str(listing)[:100]}); give --model")
    return str(first["id"])


def discover_model(url: str) -> str:
    """The served model name: the first the server lists."""
    return asyncio.run(_first_model(url))


def client_facts(plan: BenchPlan) -> dict[str, Any]:
    return {
        "tool": "forklift",
        "library": f"aiohttp {version('aiohttp')}",
        "timeout_s": plan.timeout,
        "runs": plan.runs,
        "warmup": plan.warmup,
        **({"pacing": "gamma", "burstiness": plan.cells[0].burstiness} if plan.cells[0].rate else {}),
    }


def record_bench(
    plan: BenchPlan,
    *,
    mode: str,
    folder: Path,
    progress: Progress | None = None,
    label: str | None = None,
    boot: dict[str, Any] | None = None,
    labels: Labels | None = None,
    profile: dict[str, Any] | None = None,
    kind: str = "bench",
) -> BenchOutcome:
    """Run the plan. Ctrl-C ends it with status interrupted: the outcome, not an exception.

    `labels` and `profile` go into the receipt's envelope (a launched engine's, or --build's).
    `kind` names the receipt: a ladder's burst is measured like a bench but is not one to compare.
    """
    body = BenchBody(
        url=plan.url,
        model=plan.model,
        mode=mode,  # type: ignore[arg-type]  # cell_specs refused any other mode
        workload=plan.workload.identity(),
        label=label,
        boot=boot,
        client=client_facts(plan),
    )
    envelope = (labels or Labels()).fields() | ({"profile": profile} if profile else {})
    recorder = BenchRecorder(new_receipt(kind, **envelope), body, folder)
    try:
        status: Status = asyncio.run(run_bench(plan, recorder, progress))
    except KeyboardInterrupt:
        status = "interrupted"
    except BaseException:
        recorder.finish("failed")
        raise
    kv_pool = (boot or {}).get("facts", {}).get("kv_pool_tokens")
    if kv_pool is not None:
        for cell in body.cells:
            cell.aggregate["kv_pool_tokens"] = kv_pool
    return BenchOutcome(status, recorder.finish(status), body)


def bench_launched(
    config: Config,
    profile: str,
    sets: list[str],
    make_plan: Callable[[str, str], BenchPlan],
    *,
    mode: str,
    folder: Path,
    logs: Path,
    progress: Progress | None = None,
    on_start: Callable[[Server], None] | None = None,
    on_poll: OnPoll | None = None,
    label: str | None = None,
    build: str | None = None,
) -> BenchOutcome:
    """Launch the profile (forklift.launch), bench it once healthy, stop it: nothing left running.

    `make_plan(url, served_name)` builds the bench plan once the launch is resolved. The
    boot facts (KV pool, ...) go into the bench receipt; the boot receipt is written beside it,
    and both carry the launch's labels (build, setting).
    """
    planned = make_launch_plan(config, profile, sets)
    resolved = planned.resolved
    with launched(
        config,
        planned,
        folder,
        logs,
        on_start=on_start,
        on_poll=on_poll,
        labels=Labels(build=build) if build else None,
    ) as booted:
        outcome = record_bench(
            replace(make_plan(resolved.url, resolved.served_name), api_key=resolved.api_key),
            mode=mode,
            folder=folder,
            progress=progress,
            label=label,
            boot=booted.body.model_dump(mode="json"),
            labels=booted.labels,
            profile=profile_record(resolved),
        )
    return outcome


def import_file(path: Path, folder: Path) -> BenchOutcome:
    body = import_vllm_result(path)
    complete = all(cell.complete for cell in body.cells)
    receipt = new_receipt("bench", status="ok" if complete else "partial", body=body.model_dump(mode="json"))
    return BenchOutcome(receipt.status, write_receipt(receipt, folder), body)
