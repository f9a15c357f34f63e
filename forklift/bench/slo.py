"""Goodput: the requests that met stated latency bounds (an SLO), as `vllm bench serve --goodput` counts it.

A request is good when it finished and each bounded figure is within its bound: TTFT, TPOT (vLLM's
per-request definition) and E2E, in milliseconds. A request whose bounded figure is unknown (an
answer of one token has no TPOT) is not good: a bound that cannot be shown met is not met.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from forklift.client.records import RequestRecord
from forklift.errors import UsageError, validation_line

FIGURES = ("ttft", "tpot", "e2e")


class Slo(BaseModel):
    """Latency bounds in milliseconds; at least one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ttft: float | None = Field(default=None, gt=0)
    tpot: float | None = Field(default=None, gt=0)
    e2e: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _one_bound(self) -> Slo:
        if self.ttft is None and self.tpot is None and self.e2e is None:
            raise ValueError("give at least one bound")
        return self

    def bounds(self) -> dict[str, float]:
        return {name: bound for name in FIGURES if (bound := getattr(self, name)) is not None}

    def met(self, record: RequestRecord) -> bool:
        if not record.ok:
            return False
        for name, bound in self.bounds().items():
            seconds = getattr(record, name)
            if seconds is None or seconds * 1000.0 > bound:
                return False
        return True


def parse_slo(text: str) -> Slo:
    """`--slo ttft=500,tpot=50,e2e=20000` (milliseconds) as an Slo, or one line naming what is wrong."""
    pairs: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        name, sep, value = part.partition("=")
        if not sep or name.strip() not in FIGURES:
            raise UsageError(f"--slo {text!r}: expected NAME=MS pairs, NAME one of {', '.join(FIGURES)}")
        pairs[name.strip()] = value.strip()
    try:
        return Slo.model_validate(pairs)
    except ValidationError as exc:
        raise UsageError(f"--slo {text!r}: {validation_line(exc, top='bounds')}") from None


def goodput(records: Sequence[RequestRecord], slo: Slo, duration_s: float | None) -> dict[str, Any]:
    """How many of the requests met every bound, their share and their rate over the cell's kept runs."""
    good = sum(1 for record in records if slo.met(record))
    return {
        "bounds_ms": slo.bounds(),
        "good": good,
        "requests": len(records),
        "share": good / len(records) if records else None,
        "good_per_s": good / duration_s if duration_s else None,
    }
