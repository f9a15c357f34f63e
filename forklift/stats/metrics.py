"""The per-request metrics compare judges, and which direction of each is better.

Every metric is read from a receipt's request records (as columns, forklift.stats.requests) so
statistics can always be redone from a receipt. Directions: higher decode tok/s, tok/step and tok/chunk are better; lower
TTFT, TPOT and E2E are better; output tokens have no better direction (a
change there is a difference in what was written, not in speed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from forklift.stats.requests import RequestColumns


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    better: Literal["higher", "lower"] | None
    up_word: str = ""  # verdict word when B's value is higher
    down_word: str = ""  # verdict word when B's value is lower
    trajectory_sensitive: bool = False  # depends on which text was written, not only on speed
    value: Callable[[RequestColumns], np.ndarray] = lambda columns: np.full(len(columns), np.nan)
    scale: float = 1.0  # display scale (seconds -> ms)
    decode_timing: bool = False  # unmeasured for requests delivered in bursts (RequestRecord.delivered_in_burst)
    delivery_timed: bool = False  # a burst's wait is in it: undecided when one side bursts (forklift.stats.bursts)

    def read(self, columns: RequestColumns) -> np.ndarray:
        """The metric of each request; NaN where it failed, has no value or, for decode timing, came in a burst."""
        values = np.where(columns.ok, self.value(columns), np.nan)
        return np.where(columns.burst, np.nan, values) if self.decode_timing else values


METRICS: tuple[Metric, ...] = (
    Metric(
        "decode_tps",
        "decode tok/s",
        "tok/s",
        "higher",
        "faster",
        "slower",
        value=lambda c: c.decode_tps,
        decode_timing=True,
    ),
    Metric(
        "ttft", "TTFT", "ms", "lower", "slower", "faster", value=lambda c: c.ttft, scale=1000.0, delivery_timed=True
    ),
    Metric("tpot", "TPOT", "ms", "lower", "slower", "faster", value=lambda c: c.tpot, scale=1000.0, decode_timing=True),
    Metric("e2e", "E2E", "ms", "lower", "slower", "faster", value=lambda c: c.e2e, scale=1000.0, delivery_timed=True),
    Metric(
        "tok_step", "tok/step", "", "higher", "higher", "lower", trajectory_sensitive=True, value=lambda c: c.tok_step
    ),
    Metric(
        "tok_chunk",
        "tok/chunk",
        "",
        "higher",
        "higher",
        "lower",
        trajectory_sensitive=True,
        value=lambda c: c.tok_chunk,
    ),
    Metric(
        "output_tokens",
        "output tokens",
        "tok",
        None,
        "longer",
        "shorter",
        trajectory_sensitive=True,
        value=lambda c: c.completion_tokens,
    ),
)
