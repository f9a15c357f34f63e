"""The body of a bench receipt (kind "bench"): workload identity, cells, per-request records.

compare and report read only this; keep it the seam between measuring and judging.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from forklift.client.records import RequestRecord
from forklift.workload.items import WorkloadIdentity


class Cell(BaseModel):
    """One measured configuration: a concurrency (and rate) over the workload, possibly repeated."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="e.g. 'single', 'c4', 'batch-n64-c64'")
    concurrency: int
    request_rate: float | None = None
    runs: int = 1
    kept_runs: list[int] = Field(default_factory=list, description="run indexes statistics use (warm-up dropped)")
    duration_s: float | None = None
    requests: list[RequestRecord] = Field(default_factory=list)
    aggregate: dict[str, Any] = Field(default_factory=dict)
    metrics_delta: dict[str, Any] = Field(
        default_factory=dict, description="Prometheus counter deltas over the kept runs, and tok/step"
    )
    cross_check: dict[str, Any] = Field(default_factory=dict)
    complete: bool = True

    @field_validator("requests")
    @classmethod
    def _times_run_forward(cls, requests: list[RequestRecord]) -> list[RequestRecord]:
        """A record read back must be one the clock could have made: no negative time, no event before its send."""
        for record in requests:
            times = [record.first_token, record.end, *(t for t, _ in record.chunks)]
            if record.send < 0 or any(t is not None and t < record.send for t in times):
                raise ValueError(f"prompt {record.prompt_id!r}: a time before its send (or a negative send)")
            if record.first_token is not None and record.end is not None and record.end < record.first_token:
                raise ValueError(f"prompt {record.prompt_id!r}: ends before its first token")
        return requests


class BenchBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str
    model: str
    mode: Literal["single", "sweep", "batch", "import"]
    workload: WorkloadIdentity
    setting: str | None = Field(default=None, description="human label: profile and axis choices")
    label: str | None = Field(default=None, description="the user's name for what was benched (bench --label)")
    cells: list[Cell] = Field(default_factory=list)
    boot: dict[str, Any] | None = Field(default=None, description="boot facts when forklift launched the server")
    source: str | None = Field(default=None, description="for imports: the file it was read from")
    server_info: dict[str, Any] = Field(
        default_factory=dict, description="what the server states about itself in /metrics (KV pool tokens, blocks)"
    )
    client: dict[str, Any] = Field(default_factory=dict, description="the measuring client: library, timeout, pacing")
