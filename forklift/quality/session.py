"""Suites from endpoint to receipt, against a running server or one launched from a profile.

Every suite is a plain function `run_<suite>(endpoint, options) -> SuiteBody`; this module
wraps one in a receipt (kind `quality` or `canary`), written as partial when the suite
starts and rewritten with its verdict, so an interrupted run still leaves a record.
With a profile, the server is launched once, every suite runs against it, and it is
stopped (nothing left running), as `forklift bench --profile` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from forklift.config import Config
from forklift.engines import EngineAdapter
from forklift.errors import ForkliftError, interrupt_point
from forklift.installed.package import site_from_python
from forklift.launch.boot import profile_record
from forklift.launch.plan import make_launch_plan
from forklift.launch.preflight import engine_python
from forklift.launch.resolve import Resolved
from forklift.launch.session import launched
from forklift.quality.endpoint import Endpoint
from forklift.quality.schema import SuiteBody
from forklift.receipts import new_receipt, write_receipt
from forklift.receipts.envelope import Labels, Status


@dataclass(frozen=True)
class ReadySuite:
    """A suite ready to run: its receipt kind, its name and the call that runs it."""

    kind: str  # quality or canary
    name: str
    run: Callable[[Endpoint], SuiteBody]


@dataclass
class Outcome:
    status: Status
    path: Path
    body: SuiteBody


def run_suite(
    suite: ReadySuite,
    endpoint: Endpoint,
    folder: Path,
    *,
    boot: dict[str, Any] | None = None,
    labels: Labels | None = None,
    profile: dict[str, Any] | None = None,
) -> Outcome:
    """Run one suite and write its receipt; status ok only when the suite passed.

    `labels` and `profile` go into the receipt's envelope (a launched engine's)."""
    started = SuiteBody(suite=suite.name, url=endpoint.url, model=endpoint.model, boot=boot)
    envelope = (labels or Labels()).fields() | ({"profile": profile} if profile else {})
    receipt = new_receipt(suite.kind, status="partial", body=started.model_dump(mode="json"), **envelope)
    path = write_receipt(receipt, folder)
    try:
        interrupt_point("suite")
        body = suite.run(endpoint)
    except KeyboardInterrupt:
        receipt.status = "interrupted"
        write_receipt(receipt, folder, path)
        raise
    except ForkliftError as exc:  # the suite could not run at all (server gone, bad input): say so in the receipt
        started.passed, started.failure = False, str(exc)
        receipt.status, receipt.body = "failed", started.model_dump(mode="json")
        write_receipt(receipt, folder, path)
        raise
    body.boot = boot
    receipt.status = "ok" if body.passed else "failed"
    receipt.body = body.model_dump(mode="json")
    write_receipt(receipt, folder, path)
    return Outcome(receipt.status, path, body)


def engine_roots(resolved: Resolved, adapter: EngineAdapter) -> tuple[Path, ...]:
    """Where the profile's engine package is installed: a corpus there changes with the pin."""

    python = engine_python(resolved, adapter)
    if not python or not Path(python).exists():
        return ()
    return (site_from_python(Path(python), adapter.package) / adapter.package,)


def run_launched(
    config: Config,
    profile: str,
    sets: list[str],
    suites: list[ReadySuite],
    *,
    folder: Path,
    logs: Path,
    endpoint: Endpoint | None = None,
) -> list[Outcome]:
    """Launch the profile, run every suite once it is healthy, stop it; one receipt per suite.

    `endpoint` carries options of the caller (timeout, model name); url, log and engine
    roots come from the launch. Ctrl-C stops the engine and propagates: each finished suite's receipt is
    kept, the cut one's says interrupted.
    """
    planned = make_launch_plan(config, profile, sets)
    resolved = planned.resolved
    base = endpoint or Endpoint(url="", model="")
    outcomes: list[Outcome] = []
    with launched(config, planned, folder, logs) as booted:
        target = replace(
            base,
            url=resolved.url,
            model=base.model or resolved.served_name,
            log_path=booted.server.log_path,
            engine=planned.adapter.name,
            engine_roots=engine_roots(resolved, planned.adapter),
        )
        for suite in suites:
            outcomes.append(
                run_suite(
                    suite,
                    target,
                    folder,
                    boot=booted.body.model_dump(mode="json"),
                    labels=booted.labels,
                    profile=profile_record(resolved),
                )
            )
    return outcomes
