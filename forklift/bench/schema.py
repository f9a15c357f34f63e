"""The body of a bench receipt (kind "bench"): workload identity, cells, per-request records.

compare and report read only this; keep it the seam between measuring and judging.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from forklift.client.records import RequestRecord
from forklift.workload.items import WorkloadIdentity


class GpuState(BaseModel):
    """One GPU's state over a run, sampled from NVML (or nvidia-smi) while the run's requests were in flight.

    Clocks, temperature and power move a GPU-bound step's time: a run whose GPU throttled or ran at
    another clock than its neighbours is flagged in compare (stats reads these fields).
    """

    model_config = ConfigDict(extra="forbid")

    index: int
    name: str | None = None
    samples: int = Field(description="readings taken during the run (one every GPU_SAMPLE_S)")
    sm_clock_mhz: float | None = Field(default=None, description="median SM clock over the samples")
    sm_clock_min_mhz: float | None = None
    memory_clock_mhz: float | None = Field(default=None, description="median memory clock")
    temperature_c: float | None = Field(default=None, description="highest GPU temperature")
    power_w: float | None = Field(default=None, description="median power draw")
    throttle_reasons: list[str] = Field(
        default_factory=list, description="every clock throttle reason active in any sample (idle excluded)"
    )
    source: Literal["nvml", "nvidia-smi"]


class SteadyWindow(BaseModel):
    """The part of a closed-loop run in which all C requests were in flight (ramp-up before it, drain after).

    Throughput and TPOT of a cell come from this window: while fewer than C streams run, a step
    decodes fewer tokens and is shorter, which is neither the load asked for nor stable run to run.
    TTFT keeps every request (the first C wait alike at the ramp).
    """

    model_config = ConfigDict(extra="forbid")

    start_s: float = Field(description="the C-th request was sent (client clock, the cell's time base)")
    end_s: float = Field(description="the first request ended after the last one was sent")
    requests_inside: int = Field(description="requests sent and ended inside the window (their TPOT is steady)")
    tokens: int = Field(description="tokens that arrived inside the window")
    ramp_s: float = Field(description="first send to the window's start")
    ramp_tokens: int
    drain_s: float = Field(description="the window's end to the last request's end")
    drain_tokens: int


class ServerLatency(BaseModel):
    """The server's own latency histograms (vLLM's /metrics), from their delta over a run: mean and median.

    The mean is exact (the histogram's sum over its count). A median is interpolated linearly within its
    bucket (as Prometheus' histogram_quantile does): only as fine as the bucket bounds stated beside it
    (vLLM's TPOT and ITL buckets start at 10 ms, its queue and prefill buckets at 300 ms, so a faster one's
    median is a guess inside the first bucket: read the mean).
    """

    model_config = ConfigDict(extra="forbid")

    requests: int = Field(description="observations of the TTFT histogram over the interval")
    ttft_ms: float | None = None
    ttft_bucket_ms: tuple[float, float] | None = Field(default=None, description="the bucket the median fell in")
    ttft_mean_ms: float | None = None
    tpot_ms: float | None = Field(default=None, description="the per-request time-per-output-token histogram")
    tpot_bucket_ms: tuple[float, float] | None = None
    tpot_mean_ms: float | None = None
    itl_ms: float | None = None
    itl_bucket_ms: tuple[float, float] | None = None
    itl_mean_ms: float | None = None
    e2e_ms: float | None = None
    e2e_bucket_ms: tuple[float, float] | None = None
    e2e_mean_ms: float | None = None
    queue_ms: float | None = Field(default=None, description="waiting in the engine core to be scheduled")
    queue_bucket_ms: tuple[float, float] | None = None
    queue_mean_ms: float | None = None
    prefill_ms: float | None = Field(default=None, description="scheduled until the step that made the first token")
    prefill_bucket_ms: tuple[float, float] | None = None
    prefill_mean_ms: float | None = None
    method: str = "mean: sum/count; median: interpolated linearly within its histogram bucket"


class RunFacts(BaseModel):
    """What one run of a cell saw beside its requests: its steady window, the GPU, the server's own latencies."""

    model_config = ConfigDict(extra="forbid")

    run: int
    start_s: float | None = None
    end_s: float | None = None
    steady: SteadyWindow | None = Field(default=None, description="None: too few requests to fill C streams")
    gpus: list[GpuState] | None = Field(default=None, description="None: no GPU readable on this machine")
    server: ServerLatency | None = Field(default=None, description="None: the server exposes no latency histograms")


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
    run_facts: list[RunFacts] = Field(default_factory=list, description="one per run, warm-up included")
    server_latency: ServerLatency | None = Field(
        default=None, description="the server's histogram medians over the kept runs together"
    )
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
    slo_capacity: dict[str, Any] | None = Field(
        default=None, description="with --slo: each cell's p99s against the bounds and the highest load meeting them"
    )
