"""Boot facts: what the engine reported while booting, parsed from its log.

The body of a boot receipt (kind "boot") is a BootBody. Facts the engine did
not print stay None: a missing fact is never read as zero.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Outcome = Literal["ready", "died", "timeout", "interrupted", "refused", "booting"]


class RankFacts(BaseModel):
    """What one process of a multi-process engine (a TP/PP/DP rank, an engine core) reported."""

    model_config = ConfigDict(extra="forbid")

    process: str = Field(description="the engine's own name for it: Worker_TP1, EngineCore_DP0, ...")
    pid: int
    rank: int | None = Field(default=None, description="global rank, from the engine's rank assignment line")
    tp_rank: int | None = None
    dp_rank: int | None = None
    pp_rank: int | None = None
    facts: dict[str, float | int | str] = Field(default_factory=dict, description="BootFacts fields it stated")


class BootFacts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kv_pool_tokens: int | None = None
    kv_pool_device: str | None = Field(default=None, description="where the KV pool lives: GPU, CPU, ...")
    max_concurrency: float | None = Field(default=None, description="x requests of the stated length")
    max_concurrency_tokens: int | None = None
    kv_memory_gib: float | None = Field(default=None, description="memory given to the KV cache")
    memory_available_gib: float | None = Field(default=None, description="when a boot is refused: what there was")
    memory_needed_gib: float | None = Field(default=None, description="when a boot is refused: what was asked")
    model_load_gib: float | None = None
    model_load_s: float | None = None
    compile_s: float | None = None
    graph_capture_s: float | None = None
    graph_capture_gib: float | None = None
    graph_pool_gib: float | None = Field(default=None, description="CUDA graph pool memory the GPU worker measured")
    graph_pool_estimate_gib: float | None = Field(default=None, description="what the profiler estimated it")
    gpu_free_gib: float | None = Field(default=None, description="free GPU memory when the worker started")
    gpu_total_gib: float | None = None
    gpu_memory_utilization: float | None = Field(default=None, description="the fraction the engine was asked to use")
    gpu_requested_gib: float | None = Field(default=None, description="that fraction of the GPU, in GiB")
    engine_init_s: float | None = None
    unknown_env: list[str] = Field(default_factory=list)
    fatal: str | None = Field(default=None, description="the first fatal line: the cause of a failed boot")
    listening: str | None = None
    extra: dict[str, str] = Field(default_factory=dict, description="facts added by a patch series' own log lines")
    warnings: list[str] = Field(default_factory=list, description="forklift's own warnings about the setting")
    ranks: list[RankFacts] = Field(
        default_factory=list,
        description="per process, when more than one process stated boot facts (tensor/data parallel); "
        "the top-level facts are then the last process's",
    )


class CgroupMemory(BaseModel):
    """The engine's memory cgroup as the kernel counted it: the limits set, the peak, and each event's count.

    A count the cgroup version does not keep stays None: v1 has no memory.high and no event counts but
    oom_kill (its memory.failcnt read 0 after the limit was hit and a process OOM-killed, kernel 6.18)."""

    model_config = ConfigDict(extra="forbid")

    cgroup: str
    version: Literal[1, 2]
    high_bytes: int | None = None
    max_bytes: int | None = None
    swap_max_bytes: int | None = None
    peak_bytes: int | None = None
    high_events: int | None = Field(default=None, description="times usage went over memory.high (throttled)")
    max_events: int | None = Field(default=None, description="times usage reached memory.max")
    oom_events: int | None = Field(default=None, description="times the cgroup ran out of memory")
    oom_kills: int | None = Field(default=None, description="processes the OOM killer killed in it")

    def incidents(self) -> dict[str, int]:
        """The events that happened (count > 0), by the kernel's name."""
        counts = {"high": self.high_events, "max": self.max_events, "oom": self.oom_events}
        counts["oom_kill"] = self.oom_kills
        return {name: count for name, count in counts.items() if count}


class BootBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    outcome: Outcome
    boot_seconds: float | None = None
    exit_code: int | None = Field(default=None, description="the engine's own exit code, when it exited during boot")
    log_path: str | None = None
    last_lines: list[str] = Field(default_factory=list)
    facts: BootFacts = Field(default_factory=BootFacts)
    after_stop: str | None = Field(default=None, description="the GPUs of the profile after stop: idle, or why not")
    memory: CgroupMemory | None = Field(
        default=None, description="the profile's memory cgroup: at boot, then over the whole session once stopped"
    )
