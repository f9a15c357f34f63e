"""The per-request metrics compare judges, and which direction of each is better.

Every metric is read from a RequestRecord so statistics can always be redone
from a receipt. Directions: higher decode tok/s, tok/step and tok/chunk are better; lower
TTFT, TPOT and E2E are better; output tokens have no better direction (a
change there is a difference in what was written, not in speed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from forklift.client.records import RequestRecord


def spec_tok_step(record: RequestRecord) -> float | None:
    """Tokens per engine step for one request, from its own speculative-decoding stats.

    Accepts either a ready ``tok_step`` or the counters it is made of
    (tok/step = 1 + accepted / drafts, vLLM's definition).
    """
    spec = record.spec
    if not spec:
        return None
    if spec.get("tok_step") is not None:
        return float(spec["tok_step"])
    drafts = spec.get("drafts", spec.get("num_drafts"))
    accepted = spec.get("accepted_tokens", spec.get("num_accepted_tokens"))
    if not drafts or accepted is None:
        return None
    return 1.0 + float(accepted) / float(drafts)


def tokens_per_chunk(record: RequestRecord) -> float | None:
    """Decode tokens per streamed chunk after the first: a per-request stand-in for tok/step.

    vLLM streams one chunk per engine step, so with speculative decoding a chunk
    carries 1 + accepted tokens. It is not the server's tok/step: that counts only
    steps that drafted (n-gram finds nothing to propose on some steps, which still
    stream one token), and a server that falls behind its client merges steps into
    one chunk (seen on a busy 2-core box: 3-token chunks with speculation off).
    Compare it between sides on the same box; read tok/step from the counters.
    Only when the server counted each chunk's tokens (running usage).
    """
    if record.chunk_tokens_from != "usage":
        return None
    decode_chunks = [tokens for _, tokens in record.chunks[1:] if tokens > 0]
    return sum(decode_chunks) / len(decode_chunks) if decode_chunks else None


def output_tokens(record: RequestRecord) -> float | None:
    return None if record.completion_tokens is None else float(record.completion_tokens)


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    better: Literal["higher", "lower"] | None
    up_word: str = ""  # verdict word when B's value is higher
    down_word: str = ""  # verdict word when B's value is lower
    trajectory_sensitive: bool = False  # depends on which text was written, not only on speed
    value: Callable[[RequestRecord], float | None] = lambda record: None
    scale: float = 1.0  # display scale (seconds -> ms)
    decode_timing: bool = False  # unmeasured for requests delivered in bursts (RequestRecord.delivered_in_burst)

    def read(self, record: RequestRecord, burst: bool | None = None) -> float | None:
        """The metric of one ok request, or None; `burst` when already known (it costs a pass over the chunks)."""
        if not record.ok:
            return None
        if self.decode_timing and (record.delivered_in_burst if burst is None else burst):
            return None
        return self.value(record)


METRICS: tuple[Metric, ...] = (
    Metric(
        "decode_tps",
        "decode tok/s",
        "tok/s",
        "higher",
        "faster",
        "slower",
        value=lambda r: r.decode_tps,
        decode_timing=True,
    ),
    Metric("ttft", "TTFT", "ms", "lower", "slower", "faster", value=lambda r: r.ttft, scale=1000.0),
    Metric("tpot", "TPOT", "ms", "lower", "slower", "faster", value=lambda r: r.tpot, scale=1000.0, decode_timing=True),
    Metric("e2e", "E2E", "ms", "lower", "slower", "faster", value=lambda r: r.e2e, scale=1000.0),
    Metric("tok_step", "tok/step", "", "higher", "higher", "lower", trajectory_sensitive=True, value=spec_tok_step),
    Metric(
        "tok_chunk", "tok/chunk", "", "higher", "higher", "lower", trajectory_sensitive=True, value=tokens_per_chunk
    ),
    Metric(
        "output_tokens",
        "output tokens",
        "tok",
        None,
        "longer",
        "shorter",
        trajectory_sensitive=True,
        value=output_tokens,
    ),
)
