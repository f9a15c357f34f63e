"""Prompt cohorts from JSONL: one object per line with id, messages or prompt, and optional settings."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError, model_validator

from forklift.errors import ForkliftError, UsageError, validation_line
from forklift.fsio import loads_json, read_bounded
from forklift.workload.items import PRESETS, WorkItem, Workload


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: Any


class CohortLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    messages: list[Message] | None = Field(default=None, min_length=1)
    prompt: str | None = None
    max_tokens: PositiveInt | None = None
    sampling: dict[str, Any] = Field(default_factory=dict)
    ignore_eos: bool | None = None

    @model_validator(mode="after")
    def _one_input(self) -> CohortLine:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("give exactly one of 'messages' or 'prompt'")
        return self


def load_cohort(
    path: Path,
    *,
    max_tokens: int | None = None,
    ignore_eos: bool = False,
    preset: str = "default",
    seed: int = 0,
    salted: bool = True,
    salt_nonce: str = "forklift",
) -> Workload:
    """Read a cohort; every problem stops with file, line and key."""
    if preset not in PRESETS:
        raise UsageError(f"sampling preset {preset!r}: expected one of {', '.join(PRESETS)}")
    try:
        raw = read_bounded(path, "cohort")
    except ForkliftError as exc:
        raise UsageError(str(exc)) from None
    items: list[WorkItem] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = CohortLine.model_validate(loads_json(line, f"{path}:{lineno}", "cohort line"))
        except ForkliftError as exc:
            raise UsageError(str(exc)) from None
        except ValidationError as exc:
            raise UsageError(f"{path}:{lineno}: {validation_line(exc, top='line')}") from None
        if entry.id in seen:
            raise UsageError(f"{path}:{lineno}: id {entry.id!r} already used on line {seen[entry.id]}")
        seen[entry.id] = lineno
        items.append(
            WorkItem(
                id=entry.id,
                messages=[m.model_dump() for m in entry.messages] if entry.messages else None,
                prompt=entry.prompt,
                max_tokens=entry.max_tokens or max_tokens,
                sampling=entry.sampling,
                ignore_eos=ignore_eos if entry.ignore_eos is None else entry.ignore_eos,
            )
        )
    if not items:
        raise UsageError(f"{path}: cohort has no prompts")
    kinds = {item.messages is not None for item in items}
    if len(kinds) > 1:
        raise UsageError(f"{path}: mixes 'messages' and 'prompt' lines; one cohort is one endpoint")
    return Workload(
        name=path.stem,
        endpoint="chat" if kinds.pop() else "completions",
        items=tuple(items),
        preset=preset,
        seed=seed,
        salted=salted,
        salt_nonce=salt_nonce,
        corpus_hash=hashlib.sha256(raw).hexdigest(),
    )
