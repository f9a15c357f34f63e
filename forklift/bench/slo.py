"""Goodput and capacity under stated latency bounds (an SLO): per cell, the requests that met them (as
`vllm bench serve --goodput` counts it); over a sweep, the highest load whose p99s meet them.

A request is good when it finished and each bounded figure is within its bound: TTFT, TPOT (vLLM's
per-request definition) and E2E, in milliseconds. A request whose bounded figure is unknown (an
answer of one token has no TPOT) is not good: a bound that cannot be shown met is not met.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from scipy import stats

from forklift.client.records import RequestRecord
from forklift.errors import UsageError, validation_line

if TYPE_CHECKING:
    from forklift.bench.schema import Cell

FIGURES = ("ttft", "tpot", "e2e")


class Slo(BaseModel):
    """Latency bounds in milliseconds; at least one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ttft: float | None = Field(default=None, gt=0)
    tpot: float | None = Field(default=None, gt=0)
    e2e: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _one_bound(self) -> Slo:
        if self.ttft is None and self.tpot is None and self.e2e is None:
            raise ValueError("give at least one bound")
        return self

    def bounds(self) -> dict[str, float]:
        return {name: bound for name in FIGURES if (bound := getattr(self, name)) is not None}

    def met(self, record: RequestRecord) -> bool:
        if not record.ok:
            return False
        for name, bound in self.bounds().items():
            seconds = getattr(record, name)
            if seconds is None or seconds * 1000.0 > bound:
                return False
        return True


def parse_slo(text: str) -> Slo:
    """`--slo ttft=500,tpot=50,e2e=20000` (milliseconds) as an Slo, or one line naming what is wrong."""
    pairs: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        name, sep, value = part.partition("=")
        if not sep or name.strip() not in FIGURES:
            raise UsageError(f"--slo {text!r}: expected NAME=MS pairs, NAME one of {', '.join(FIGURES)}")
        pairs[name.strip()] = value.strip()
    try:
        return Slo.model_validate(pairs)
    except ValidationError as exc:
        raise UsageError(f"--slo {text!r}: {validation_line(exc, top='bounds')}") from None


def goodput(records: Sequence[RequestRecord], slo: Slo, duration_s: float | None) -> dict[str, Any]:
    """How many of the requests met every bound, their share and their rate over the cell's kept runs."""
    good = sum(1 for record in records if slo.met(record))
    return {
        "bounds_ms": slo.bounds(),
        "good": good,
        "requests": len(records),
        "share": good / len(records) if records else None,
        "good_per_s": good / duration_s if duration_s else None,
    }


PERCENTILE = 99
LEVEL = 0.95


def p99_interval(values: np.ndarray) -> tuple[float, float, float]:
    """The p99 of the values and its distribution-free 95 % interval from order statistics.

    The count of requests below the true p99 is Binomial(n, 0.99), so the k-th smallest value lies above it
    with probability P(B < k): the bounds are the order statistics where that reaches 2.5 % and 97.5 %.
    Below 368 requests no order statistic is a 97.5 % upper bound (0.99^368 < 2.5 %): the upper end is
    infinite and a p99 can be shown beyond a bound, never within one. (A bootstrap of the p99 cannot see
    past the largest value and claimed a p99 at its bound within it half the time at 64 requests.)"""
    ordered = np.sort(values)
    n = len(ordered)
    point = float(np.percentile(ordered, PERCENTILE, method="higher"))
    tail = (1 - LEVEL) / 2
    below = stats.binom.cdf(np.arange(n + 1), n, PERCENTILE / 100)  # P(B <= k), k = 0..n
    upper_k = int(np.searchsorted(below, 1 - tail)) + 1  # smallest k with P(B <= k - 1) >= 97.5 %
    lower_k = int(np.searchsorted(below, tail, side="right"))  # largest j with P(B >= j) >= 97.5 %
    high = float(ordered[upper_k - 1]) if upper_k <= n else math.inf
    low = float(ordered[lower_k - 1]) if lower_k >= 1 else -math.inf
    return point, low, high


def capacity(cells: Sequence[Cell], slo: Slo) -> dict[str, Any]:
    """The highest load (cells in the order measured, lightest first) whose p99s meet every bound.

    A cell meets the SLO when the upper end of each bounded p99's interval is within its bound, misses it
    when the lower end of one is beyond, and is undecided otherwise; a failed request counts as beyond any
    bound. The highest cell is the last of an unbroken run of cells that meet it from the lightest on."""
    rows: list[dict[str, Any]] = []
    highest: str | None = None
    unbroken = True
    for cell in cells:
        kept = [r for r in cell.requests if r.run in cell.kept_runs]
        figures: dict[str, list[float]] = {}
        verdicts = []
        for name, bound in slo.bounds().items():
            values = np.asarray(
                [seconds * 1000.0 if r.ok and (seconds := getattr(r, name)) is not None else math.inf for r in kept]
            )
            if not len(values):
                verdicts.append("undecided")
                continue
            point, low, high = p99_interval(values)
            figures[name] = [point, low, high]
            verdicts.append("meets" if high <= bound else "misses" if low > bound else "undecided")
        verdict = "misses" if "misses" in verdicts else "undecided" if "undecided" in verdicts else "meets"
        unbroken = unbroken and verdict == "meets"
        if unbroken:
            highest = cell.name
        rows.append(
            {
                "cell": cell.name,
                "concurrency": cell.concurrency,
                "rate": cell.request_rate,
                "requests": len(kept),
                "p99_ms": figures,
                "verdict": verdict,
            }
        )
    return {"bounds_ms": slo.bounds(), "percentile": PERCENTILE, "cells": rows, "highest": highest}
