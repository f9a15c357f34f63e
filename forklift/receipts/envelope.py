"""The receipt envelope shared by every command that measures.

A receipt says what was measured (kind + body), on what (pin, overlay hash,
profile), where (machine fingerprint) and whether it is whole (status). The
body is kind-specific; the envelope is what compare and report rely on to
refuse comparing things that are not comparable.
"""

from __future__ import annotations

import os
import platform
import socket
import uuid
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

import forklift

# /2 stores the setting once, in the envelope; /1 receipts are still read (store.from_schema_1).
SCHEMA = "forklift.receipt/2"

Status = Literal["ok", "failed", "partial", "interrupted"]


class Fingerprint(BaseModel):
    """The machine a receipt was measured on; boxes are compared as rows, never averaged."""

    model_config = ConfigDict(extra="forbid")

    hostname: str
    machine_id: str = Field(description="stable id of the box (/etc/machine-id when present)")
    os: str
    arch: str
    cpu: str
    cpu_count: int
    memory_bytes: int
    gpus: list[str] = Field(default_factory=list)
    python: str
    forklift: str


class Receipt(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: str = Field(default=SCHEMA, alias="schema")
    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    kind: str = Field(description="check, flip, boot, bench, ... : what the body holds")
    created: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    status: Status = "ok"
    fingerprint: Fingerprint
    pin: dict[str, Any] | None = Field(default=None, description="the upstream pin, as in forklift.toml")
    overlay_hash: str | None = None
    engine_version: str | None = None
    image: str | None = Field(default=None, description="the container image the engine ran in (its ID), when known")
    profile: dict[str, Any] | None = Field(default=None, description="name, choices, argv and redacted env")
    # Labels compare and report group by, so a folder of receipts needs no flags and no relabelling.
    build: str | None = Field(default=None, description="the engine build: --build NAME, else version+overlay hash")
    setting: str | None = Field(default=None, description="the run setting: profile, axis choices, --set overrides")
    aa: int | None = Field(default=None, description="A/A control: which copy (1 or 2) of the same build and setting")
    body: dict[str, Any] = Field(default_factory=dict)


class Labels(BaseModel):
    """The envelope fields one launched engine gives every receipt it measures: what compare and report group by."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pin: dict[str, Any] | None = None
    engine_version: str | None = None
    overlay_hash: str | None = None
    image: str | None = None
    build: str | None = None
    setting: str | None = None
    aa: int | None = None

    def over(self, base: Labels) -> Labels:
        """`base` with the labels given here (a None given on purpose included) put over it."""
        return base.model_copy(update={name: getattr(self, name) for name in self.model_fields_set})

    def fields(self) -> dict[str, Any]:
        """As new_receipt's keyword fields."""
        return self.model_dump()


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _machine_id() -> str:
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            with open(path, encoding="utf-8") as fh:
                value = fh.read().strip()
                if value:
                    return value
        except OSError:
            continue
    return socket.gethostname()


def _gpus() -> list[str]:
    """GPU names from the NVIDIA driver's proc files; no GPU library is imported for this."""
    root = "/proc/driver/nvidia/gpus"
    names = []
    try:
        for bus in sorted(os.listdir(root)):
            with open(os.path.join(root, bus, "information"), encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith("Model:"):
                        names.append(line.split(":", 1)[1].strip())
    except OSError:
        pass
    return names


def fingerprint() -> Fingerprint:
    return Fingerprint(
        hostname=socket.gethostname(),
        machine_id=_machine_id(),
        os=f"{platform.system()} {platform.release()}",
        arch=platform.machine(),
        cpu=_cpu_name(),
        cpu_count=os.cpu_count() or 0,
        memory_bytes=_memory_bytes(),
        gpus=_gpus(),
        python=platform.python_version(),
        forklift=forklift.__version__,
    )


def setting_label(receipt: Receipt, absent: str = "default") -> str:
    """The one reading of a receipt's setting: the envelope's (schema /2 stores it nowhere else)."""
    return receipt.setting or absent


def default_build(version: str | None, overlay_hash: str | None) -> str:
    """The build label when none is given: engine version, plus the overlay hash's head when patched.

    A wheel from `forklift wheel` already names its overlay (0.32.0+forklift.e6745a56): that is the label."""
    version = version or "unknown"
    head = overlay_hash.removeprefix("sha256:")[:8] if overlay_hash else None
    if head is None or version.endswith(f"forklift.{head}"):
        return version
    return f"{version}+{head}"


def new_receipt(kind: str, **fields: Any) -> Receipt:
    return Receipt(kind=kind, fingerprint=fingerprint(), **fields)
