"""Did the two sides write the same text? Divergence across sides, determinism within a side.

Under greedy decoding a change of engine can still change the text (a
different kernel rounds differently, one token flips, the rest of the answer
follows). Once the texts differ, speculative acceptance and tok/step are
measured on different trajectories: their per-prompt deltas are confounded
and say nothing about the engine. Output hashes are how we see it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from forklift.client.records import RequestRecord
from forklift.stats.sample import Key


def is_greedy(sampling: dict[str, Any]) -> bool:
    """Greedy when the preset says so or temperature is exactly zero."""
    if str(sampling.get("preset", "")).lower() == "greedy":
        return True
    temperature = sampling.get("temperature", (sampling.get("params") or {}).get("temperature"))
    try:
        return temperature is not None and float(temperature) == 0.0
    except (TypeError, ValueError):
        return False


class Divergence(BaseModel):
    assessed: bool
    reason: str  # why not assessed, or what was compared
    compared: int = 0  # prompts with a hash on both sides
    diverged: list[str] = []  # prompt ids whose texts differ in at least one pair

    @property
    def summary(self) -> str:
        if not self.assessed:
            return f"divergence not assessed: {self.reason}"
        if not self.diverged:
            return f"no divergence: all {self.compared} prompts wrote the same text on both sides"
        shown = ", ".join(self.diverged[:10]) + (", ..." if len(self.diverged) > 10 else "")
        return (
            f"{len(self.diverged)}/{self.compared} prompts diverged (greedy, output hashes differ: {shown}): "
            "tok/step and acceptance deltas are confounded by trajectory"
        )


def divergence(
    a: dict[Key, RequestRecord], b: dict[Key, RequestRecord], greedy_a: bool, greedy_b: bool
) -> Divergence:
    """Per prompt: did any pair (same prompt, same kept-run ordinal) end in different output hashes?"""
    if not (greedy_a and greedy_b):
        return Divergence(assessed=False, reason="not greedy on both sides, so texts are expected to differ")
    compared: set[str] = set()
    diverged: set[str] = set()
    for key in a.keys() & b.keys():
        hash_a, hash_b = a[key].output_sha256, b[key].output_sha256
        if hash_a and hash_b:
            compared.add(key[0])
            if hash_a != hash_b:
                diverged.add(key[0])
    if not compared:
        return Divergence(assessed=False, reason="no paired requests with output hashes on both sides")
    return Divergence(assessed=True, reason="greedy on both sides", compared=len(compared), diverged=sorted(diverged))


class Determinism(BaseModel):
    prompts: int  # prompts run at least twice with a hash each time
    runs: int  # most runs any prompt had
    changed: list[str] = []  # prompt ids whose text changed between runs

    @property
    def summary(self) -> str:
        if not self.prompts:
            return "one run per prompt: determinism unknown"
        if not self.changed:
            return f"deterministic: {self.prompts} prompts wrote the same text in all {self.runs} runs"
        return f"not deterministic: {len(self.changed)}/{self.prompts} prompts changed text between runs"


def determinism(by_prompt: dict[tuple[str, int], list[RequestRecord]]) -> Determinism:
    """Same side, several runs (warm-up included): one output hash per prompt means the side reproduces itself."""
    repeated = {key: [r.output_sha256 for r in records if r.ok and r.output_sha256] for key, records in by_prompt.items()}
    repeated = {key: hashes for key, hashes in repeated.items() if len(hashes) >= 2}
    changed = sorted({key[0] for key, hashes in repeated.items() if len(set(hashes)) > 1})
    runs = max((len(hashes) for hashes in repeated.values()), default=0)
    return Determinism(prompts=len({key[0] for key in repeated}), runs=runs, changed=changed)
