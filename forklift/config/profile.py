"""Launch profiles in forklift.toml: `[profiles.NAME]` tables (schema only; forklift/launch/resolve.py resolves them).

[profiles.base]
model = "Qwen/Qwen3-8B"
served_name = "qwen3"
args = { max-model-len = 8192, enforce-eager = true }
env = { VLLM_LOGGING_LEVEL = "INFO" }
defaults = { spec = "off" }

[profiles.base.axes.spec.ngram.args]
speculative-config = { method = "ngram", num_speculative_tokens = 3 }

[profiles.base.axes.spec.off]

[profiles.long]
extends = "base"
args = { max-model-len = 32768 }
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ByteSize, ConfigDict, Field, field_validator, model_validator

# A TOML value turned into a flag: true -> --flag, false -> --no-flag, a table -> JSON,
# a list of scalars -> repeated values, a number or string -> its text. Kept as TOML parsed
# it (Any) so resolve.py can refuse a value no flag can take with one line naming it.
ArgValue = Any
EnvValue = Any
# A box's GPU indices and a cluster's nodes: far above any machine, low enough that a count from someone else's
# forklift.toml cannot become a list of a billion ranks.
MAX_GPUS = 1024
MAX_NODES = 1024


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Choice(_Strict):
    """One named value of an axis: the flags and variables it adds."""

    args: dict[str, ArgValue] = Field(default_factory=dict)
    env: dict[str, EnvValue] = Field(default_factory=dict)


class Ray(_Strict):
    """A multi-node profile: vLLM over a Ray cluster of a head and workers (started by hand, printed here)."""

    head: str = Field(description="the head node's address, as the workers reach it")
    port: int = Field(default=6379, ge=1, le=65535)
    workers: list[str] = Field(min_length=1, max_length=MAX_NODES, description="the worker nodes")
    gpus_per_node: int = Field(ge=1, le=MAX_GPUS)


class MemoryLimits(_Strict):
    """A memory-bounded cgroup around the engine (`memory = { max = "96GiB", swap_max = 0 }`): the kernel
    enforces it and counts what reached it; sizes take units (GiB, MB) or bytes."""

    high: ByteSize | None = Field(default=None, description="memory.high: throttled and reclaimed above (cgroup v2)")
    max: ByteSize | None = Field(default=None, description="memory.max: the OOM killer acts above it")
    swap_max: ByteSize | None = Field(default=None, description="swap the engine may use on top; 0 = none")

    @model_validator(mode="after")
    def _one_limit(self) -> MemoryLimits:
        if self.high is None and self.max is None:
            raise ValueError("give high or max (a cgroup with no limit bounds nothing)")
        if self.high is not None and self.max is not None and self.high > self.max:
            raise ValueError(f"high ({self.high.human_readable()}) is above max ({self.max.human_readable()})")
        return self


class Profile(_Strict):
    extends: str | None = Field(default=None, description="a profile this one starts from")
    model: str | None = None
    served_name: str | None = None
    host: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    python: str | None = Field(
        default=None, description="the engine's interpreter; default: the engine's console script on PATH"
    )
    command: list[str] | None = Field(
        default=None, description="the command before the model, replacing the engine's own (a wrapper, a container)"
    )
    health_timeout: float | None = Field(default=None, gt=0, description="seconds to wait for /health")
    args: dict[str, ArgValue] = Field(default_factory=dict)
    env: dict[str, EnvValue] = Field(default_factory=dict)
    gpus: list[Annotated[int, Field(ge=0, le=MAX_GPUS)]] | None = Field(
        default=None,
        max_length=MAX_GPUS,
        description="GPU indices of this profile, one per rank: CUDA_VISIBLE_DEVICES, the idle check",
    )
    ray: Ray | None = None
    memory: MemoryLimits | None = Field(default=None, description="run the engine inside a memory-bounded cgroup")
    axes: dict[str, dict[str, Choice]] = Field(default_factory=dict)
    defaults: dict[str, str] = Field(default_factory=dict, description="axis -> choice when --set does not pick")

    @field_validator("axes")
    @classmethod
    def _axes_have_choices(cls, axes: dict[str, dict[str, Choice]]) -> dict[str, dict[str, Choice]]:
        for axis, choices in axes.items():
            if not choices:
                raise ValueError(f"axis {axis!r} has no choices")
        return axes
