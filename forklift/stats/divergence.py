"""Did the two sides write the same text? Divergence across sides, determinism within a side.

Under greedy decoding a change of engine can still change the text (a
different kernel rounds differently, one token flips, the rest of the answer
follows). Once the texts differ, speculative acceptance and tok/step are
measured on different trajectories: their per-prompt deltas are confounded
and say nothing about the engine. Output hashes are how we see it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel

# What identifies the exact text a request sent (stats.sample.text_hashes): its prompt id alone when unsalted
# (a string, not a tuple of one: a million prompts are 16 MB of tuples), else the salt's inputs after it.
TextKey = str | tuple[Any, ...]


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


class TextCodes:
    """Numbers for the texts requests sent and the outputs they got, shared by the sides of one comparison."""

    def __init__(self) -> None:
        self.texts: dict[TextKey, int] = {}
        self.outputs: dict[str, int] = {}
        self.prompts: list[str] = []  # text code -> the prompt id it is a text of

    def text(self, key: TextKey) -> int:
        code = self.texts.setdefault(key, len(self.texts))
        if code == len(self.prompts):
            self.prompts.append(key if isinstance(key, str) else str(key[0]))
        return code

    def output(self, digest: str) -> int:
        return self.outputs.setdefault(digest, len(self.outputs))

    def pairs(self, side: TextHashes) -> np.ndarray:
        """Each distinct (text, output) of a side as one number."""
        return distinct(side.text.astype(np.int64) * max(len(self.outputs), 1) + side.output)

    def named(self, texts: np.ndarray) -> set[str]:
        return {self.prompts[code] for code in texts.tolist()}


def distinct(values: np.ndarray) -> np.ndarray:
    """np.unique(values), by sorting: numpy's hash table (2.3 on) takes 3x longer over a million distinct values."""
    ordered = np.sort(values)
    first = np.ones(len(ordered), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    return ordered[first]


@dataclass(frozen=True)
class TextHashes:
    """One side's ok requests with an output hash: the text each sent and the output it got (TextCodes numbers,
    32 bits: fewer than the rows)."""

    text: np.ndarray
    output: np.ndarray


def divergence(a: TextHashes, b: TextHashes, codes: TextCodes, greedy_a: bool, greedy_b: bool) -> Divergence:
    """Per prompt: did the same text sent to both sides come back different? (stats.sample.text_hashes)"""
    if not (greedy_a and greedy_b):
        return Divergence(assessed=False, reason="not greedy on both sides, so texts are expected to differ")
    common = np.intersect1d(distinct(a.text), distinct(b.text), assume_unique=True)
    compared = codes.named(common)
    if not compared:
        return Divergence(
            assessed=False,
            reason="no prompt was sent as the same text to both sides with an output hash on each "
            "(salts differ: another nonce or run index)",
        )
    per_text = max(len(codes.outputs), 1)
    pairs_a, pairs_b = (pairs[np.isin(pairs // per_text, common)] for pairs in (codes.pairs(a), codes.pairs(b)))
    either = np.setxor1d(pairs_a, pairs_b, assume_unique=True)
    diverged = codes.named(distinct(either // per_text))  # a text whose outputs differ
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


def determinism(side: TextHashes, codes: TextCodes) -> Determinism:
    """Same side, same input text sent again (another run unsalted, or another receipt with the same salts)."""
    texts, sends = np.unique(side.text, return_counts=True)
    repeated = texts[sends >= 2]
    if not len(repeated):
        return Determinism(prompts=0, sends=0)
    outputs_of, distinct = np.unique(codes.pairs(side) // max(len(codes.outputs), 1), return_counts=True)
    changed = codes.named(outputs_of[distinct > 1])
    return Determinism(prompts=len(codes.named(repeated)), sends=int(sends.max()), changed=sorted(changed))
