"""One boot, start to verdict: start the server, wait, read the facts, write the boot receipt.

The receipt is written when the boot starts (status partial) and rewritten with
the verdict, so a boot cut short still leaves a record of what was tried.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forklift.engines import EngineAdapter
from forklift.errors import ForkliftError
from forklift.launch.resolve import Resolved, setting_name, shown_argv, shown_env
from forklift.launch.schema import BootBody, BootFacts
from forklift.launch.supervise import OnPoll, Server, boot_body, start, stop, wait_healthy
from forklift.receipts import new_receipt, write_receipt
from forklift.receipts.envelope import Labels, Status

STATUS: dict[str, Status] = {"ready": "ok", "interrupted": "interrupted", "booting": "partial"}


@dataclass
class Booted:
    server: Server
    body: BootBody
    receipt_path: Path | None
    labels: Labels  # the receipts' envelope fields (pin, build, setting...)

    @property
    def ready(self) -> bool:
        return self.body.outcome == "ready"


def profile_record(resolved: Resolved) -> dict[str, Any]:
    """What a receipt keeps of the setting: name, choices, the exact argv and env, secrets redacted."""
    return {
        "name": resolved.profile,
        "choices": resolved.choices,
        "argv": shown_argv(resolved),
        "env": shown_env(resolved),
    }


def control_variable(adapter: EngineAdapter) -> str:
    """A made-up knob no engine registers: the positive control for its unknown-variable warning."""
    return f"{adapter.env_prefix}FORKLIFT_CONTROL_{secrets.token_hex(4).upper()}"


def boot(
    resolved: Resolved,
    adapter: EngineAdapter,
    log_path: Path,
    receipts: Path | None,
    *,
    extra_env: dict[str, str] | None = None,
    warnings: list[str] | None = None,
    labels: Labels | None = None,
    on_start: Callable[[Server], None] | None = None,
    on_poll: OnPoll | None = None,
) -> Booted:
    """Boot and return the verdict; a failed boot is stopped (its process group gone) before returning.

    KeyboardInterrupt (Ctrl-C, or SIGTERM from `forklift stop` turned into one) stops the
    server, marks the receipt interrupted and propagates.
    """
    labels = (labels or Labels()).over(Labels(setting=setting_name(resolved)))
    receipt = new_receipt(
        "boot",
        status="partial",
        profile=profile_record(resolved),
        body=BootBody(outcome="booting", log_path=str(log_path)).model_dump(),
        **labels.fields(),
    )
    path = write_receipt(receipt, receipts) if receipts else None

    def record(body: BootBody) -> None:
        body.facts.warnings = list(warnings or [])
        if path is not None and receipts is not None:
            receipt.status = STATUS.get(body.outcome, "failed")
            receipt.body = body.model_dump()
            write_receipt(receipt, receipts, path)

    try:
        server = start(resolved, log_path, extra_env)
    except ForkliftError as exc:  # nothing started: the receipt says why, not "partial" forever
        record(BootBody(outcome="refused", log_path=str(log_path), facts=BootFacts(fatal=str(exc))))
        raise
    try:
        if on_start:
            on_start(server)
        body = wait_healthy(server, adapter, resolved.health_timeout, on_poll)
    except KeyboardInterrupt:
        stop(server)
        record(boot_body(server, adapter, "interrupted"))
        raise
    except BaseException:
        stop(server)  # never leave an engine running that nobody supervises
        raise
    if body.outcome != "ready":
        stop(server)  # a dead leader can leave workers behind; a timed-out one is still running
    record(body)
    return Booted(server, body, path, labels)


def engine_reason(body: BootBody) -> str | None:
    """The engine's own words for a failed boot: its memory figures when it gave them, else its fatal line."""
    facts = body.facts
    if facts.memory_available_gib is not None and facts.memory_needed_gib is not None:
        return f"{facts.memory_available_gib:.2f} GiB available, {facts.memory_needed_gib:.2f} needed"
    return facts.fatal


def failure_message(body: BootBody) -> str:
    """One line: the fatal line when the log has one, else the timeout and the log's last line."""
    where = f" (log: {body.log_path})" if body.log_path else ""
    kills = body.memory.oom_kills if body.memory else None
    if body.outcome == "died" and kills and body.memory:
        limit = f"{body.memory.max_bytes / 2**30:.2f} GiB" if body.memory.max_bytes else "its limit"
        return (
            f"engine killed during boot by its memory cgroup's OOM killer ({kills} process(es) over memory.max "
            f"{limit}; peak {(body.memory.peak_bytes or 0) / 2**30:.2f} GiB){where}"
        )
    if body.outcome == "died":
        # Whether the engine exited by itself or was stopped after saying it was going down is a
        # race; the message leads with the cause either way.
        code = f" (exit code {body.exit_code})" if body.exit_code is not None else ""
        cause = body.facts.fatal or (body.last_lines[-1] if body.last_lines else "no output")
        return f"engine failed during boot{code}: {cause}{where}"
    if body.outcome == "timeout":
        tail = " | ".join(line.strip() for line in body.last_lines[-3:] if line.strip()) or "no output"
        return f"engine not healthy after {body.boot_seconds:.0f} s; last log lines: {tail}{where}"
    return f"boot {body.outcome}{where}"


def check_control(body: BootBody, variable: str) -> None:
    """The positive control holds only if the engine warned about exactly the made-up variable."""
    seen = body.facts.unknown_env
    if seen != [variable]:
        raise ForkliftError(
            f"positive control failed: exported {variable}, the engine warned about "
            f"{', '.join(seen) if seen else 'no unknown variable'}"
        )
