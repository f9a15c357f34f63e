"""The body of a bench receipt (kind "bench"): workload identity, cells, per-request records.

compare and report read only this; keep it the seam between measuring and judging.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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


class BenchBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str
    model: str
    mode: Literal["single", "sweep", "batch", "import"]
    workload: WorkloadIdentity
    label: str | None = Field(default=None, description="the user's name for what was benched (bench --label)")
    cells: list[Cell] = Field(default_factory=list)
    boot: dict[str, Any] | None = Field(default=None, description="boot facts when forklift launched the server")
    boot_id: str | None = Field(
        default=None,
        description="which server boot was benched (e.g. its boot receipt's id): compare's unit across boots",
    )
    source: str | None = Field(default=None, description="for imports: the file it was read from")
    server_info: dict[str, Any] = Field(
        default_factory=dict, description="what the server states about itself in /metrics (KV pool tokens, blocks)"
    )
    client: dict[str, Any] = Field(default_factory=dict, description="the measuring client: library, timeout, pacing")
