"""The receipt envelope shared by every command that measures.

A receipt says what was measured (kind + body), on what (pin, overlay hash,
profile), where (machine fingerprint) and whether it is whole (status). The
body is kind-specific; the envelope is what compare and report rely on to
refuse comparing things that are not comparable.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from forklift.receipts.facts import machine_facts, new_id

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
    id: str = Field(default_factory=new_id)
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


def fingerprint() -> Fingerprint:
    return Fingerprint(**machine_facts())


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
