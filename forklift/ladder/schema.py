"""Ladder receipt bodies: one `ladder-cell` per value, and the `ladder` that sums them up."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CellOutcome = Literal["pass", "boot-failed", "requests-failed", "fatal-in-log", "interrupted"]


class Burst(BaseModel):
    """What each cell sends once healthy: N requests at concurrency C, fixed lengths, unique salts, ignore_eos."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests: int = Field(default=16, ge=1)
    concurrency: int = Field(default=4, ge=1)
    input_tokens: int = Field(default=128, ge=1)
    output_tokens: int = Field(default=64, ge=1)
    timeout_s: float = Field(default=600.0, gt=0)


class LadderCell(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    value: str
    setting: str
    outcome: CellOutcome
    reason: str | None = Field(default=None, description="the engine's own words (memory figures, fatal line)")
    boot_outcome: str | None = None
    boot_seconds: float | None = None
    kv_pool_tokens: int | None = None
    kv_memory_gib: float | None = None
    memory: dict[str, float] = Field(default_factory=dict, description="worst reading while the burst ran")
    requests: int = 0
    requests_ok: int = 0
    failures: dict[str, int] = Field(default_factory=dict)
    cold: bool = False
    cold_caches: dict[str, str] = Field(
        default_factory=dict, description="a cold cell: each compile-cache variable and the fresh folder it named"
    )
    log_path: str | None = None
    boot_receipt: str | None = None
    burst_receipt: str | None = None


class LadderBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    profile: str
    setting: str
    key: str
    values: list[str]
    burst: Burst
    cold: bool = False
    margin: str | None = None
    cells: list[LadderCell] = Field(default_factory=list)
    highest_pass: str | None = None
    recommended: str | None = None
    note: str | None = None
    stopped_early: bool = False
