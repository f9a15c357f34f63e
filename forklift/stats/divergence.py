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

TextKey = tuple[Any, ...]  # what identifies the exact text a request sent (stats.sample.hashes_by_text)


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


def divergence(a: dict[TextKey, list[str]], b: dict[TextKey, list[str]], greedy_a: bool, greedy_b: bool) -> Divergence:
    """Per prompt: did the same text sent to both sides come back different? (the ok requests' output hashes,
    keyed by the text each sent: stats.sample.hashes_by_text)"""
    if not (greedy_a and greedy_b):
        return Divergence(assessed=False, reason="not greedy on both sides, so texts are expected to differ")
    compared: set[str] = set()
    diverged: set[str] = set()
    for key in a.keys() & b.keys():
        hashes_a, hashes_b = {h for h in a[key] if h}, {h for h in b[key] if h}
        if hashes_a and hashes_b:
            compared.add(key[0])
            if hashes_a != hashes_b:
                diverged.add(key[0])
    if not compared:
        return Divergence(
            assessed=False,
            reason="no prompt was sent as the same text to both sides with an output hash on each "
            "(salts differ: another nonce or run index)",
        )
    return Divergence(assessed=True, reason="greedy on both sides", compared=len(compared), diverged=sorted(diverged))


class Determinism(BaseModel):
    prompts: int  # prompts whose exact text was sent at least twice, with a hash each time
    sends: int  # most times one text was sent
    changed: list[str] = []  # prompt ids whose output changed between sends of the same text

    @property
    def summary(self) -> str:
        if not self.prompts:
            return "determinism unknown (no prompt text sent twice: salted runs send new text)"
        if not self.changed:
            return f"deterministic ({self.prompts} prompts, up to {self.sends} sends each)"
        return f"NOT deterministic: {len(self.changed)}/{self.prompts} prompts wrote different text for the same input"


def determinism(by_text: dict[TextKey, list[str]]) -> Determinism:
    """Same side, same input text sent again (another run unsalted, or another receipt with the same salts)."""
    repeated = {key: [h for h in hashes if h] for key, hashes in by_text.items()}
    repeated = {key: hashes for key, hashes in repeated.items() if len(hashes) >= 2}
    changed = sorted({key[0] for key, hashes in repeated.items() if len(set(hashes)) > 1})
    sends = max((len(hashes) for hashes in repeated.values()), default=0)
    return Determinism(prompts=len({key[0] for key in repeated}), sends=sends, changed=changed)
