"""Workload items, sampling presets and the workload's identity (what makes two benches comparable)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from forklift.client.records import Endpoint

# Sampling presets: "default" sends nothing, so the model's generation_config decides.
PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    "greedy": {"temperature": 0.0},
    "seeded": {},  # a per-item seed is added, see Workload.sampling
}


class WorkloadIdentity(BaseModel):
    """What must match for two bench receipts to be comparable."""

    model_config = ConfigDict(extra="forbid")

    name: str
    hash: str = Field(description="sha256 of the prompts, ids and per-request settings (salt excluded)")
    corpus_hash: str | None = Field(default=None, description="sha256 of the source file (cohort JSONL)")
    sampling: dict[str, Any] = Field(default_factory=dict, description="preset name and parameters")
    max_tokens: int | None = None
    salted: bool = True
    endpoint: Endpoint = "chat"
    prompts: int | None = Field(default=None, description="number of distinct prompts in the workload")
    salt_nonce: str | None = Field(default=None, description="what the per-request salts derive from (not hashed)")


@dataclass(frozen=True)
class WorkItem:
    """One prompt of a workload, before salt and sampling are applied."""

    id: str
    messages: list[dict[str, Any]] | None = None
    prompt: str | None = None
    max_tokens: int | None = None
    sampling: dict[str, Any] = field(default_factory=dict)
    ignore_eos: bool = False
    synthetic_tokens: int | None = None  # fit the prompt to exactly this many input tokens
    synthetic_seed: int | None = None  # which filler text the synthetic prompt is cut from
    conversation: int | None = None  # a multi-turn workload: which conversation this user turn belongs to
    turn: int | None = None  # ... and which of its turns (1 = the first)

    def definition(self) -> dict[str, Any]:
        """Everything that defines the item (no salt): the input of the workload hash."""
        out: dict[str, Any] = {"id": self.id, "max_tokens": self.max_tokens, "ignore_eos": self.ignore_eos}
        if self.synthetic_tokens is not None:
            out["synthetic"] = {"input_tokens": self.synthetic_tokens, "seed": self.synthetic_seed}
        elif self.messages is not None:
            out["messages"] = self.messages
        else:
            out["prompt"] = self.prompt
        if self.turn is not None:
            out["conversation"], out["turn"] = self.conversation, self.turn
        return out


@dataclass(frozen=True)
class Workload:
    name: str
    endpoint: Endpoint
    items: tuple[WorkItem, ...]
    preset: str = "default"
    seed: int = 0
    salted: bool = True
    salt_nonce: str = "forklift"
    corpus_hash: str | None = None
    interleave: Literal["alternating", "concurrent"] | None = None  # a multi-turn workload: how turns are sent

    def sampling(self, index: int, item: WorkItem) -> dict[str, Any]:
        """The preset, then the seeded preset's per-item seed, then the item's own settings."""
        params = dict(PRESETS[self.preset])
        if self.preset == "seeded":
            params["seed"] = self.seed + index
        params.update(item.sampling)
        return params

    @property
    def hash(self) -> str:
        items = []
        for index, item in enumerate(self.items):
            items.append({**item.definition(), "sampling": self.sampling(index, item)})
        canonical = json.dumps({"endpoint": self.endpoint, "items": items}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def identity(self) -> WorkloadIdentity:
        lengths = {item.max_tokens for item in self.items}
        return WorkloadIdentity(
            name=self.name,
            hash=self.hash,
            corpus_hash=self.corpus_hash,
            sampling={"preset": self.preset, **({"seed": self.seed} if self.preset == "seeded" else {})},
            max_tokens=lengths.pop() if len(lengths) == 1 else None,
            salted=self.salted,
            endpoint=self.endpoint,
            prompts=len(self.items),
            salt_nonce=self.salt_nonce if self.salted else None,
        )
