"""Per-cell aggregates from request records (numpy). Pure: records in, numbers out.

Definitions follow `vllm bench serve` so the numbers read the same:
TTFT = first content chunk - send; TPOT = (E2E - TTFT) / (tokens - 1), per request;
ITL = chunk gaps divided across the tokens each chunk carried; E2E = end - send.
Latencies are in milliseconds. Aggregate decode = concurrency x 1000 / median TPOT (ms):
the decode rate C streams sustain, using the median so a few slow requests do not move it.
With the runs' steady windows (bench/steady.py), TPOT, ITL and decode rates come from the
requests that lay wholly inside their run's window (all C streams in flight); every request's
TPOT is kept beside it (tpot_all_ms), and the window's own token rate, ramp-up and drain are
stated apart. TTFT and E2E keep every request.
Decode timing (TPOT, ITL, decode rates) is taken over timed requests only: a request whose
chunks all arrived in one burst measured delivery, not decoding (the same filter compare
uses), and the table counts them. TTFT keeps them, flagged: a burst's first chunk waited too.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from forklift.bench.schema import SteadyWindow
from forklift.bench.slo import Slo, goodput
from forklift.bench.steady import inside
from forklift.client.records import RequestRecord

PERCENTILES = (50, 90, 99)


def distribution(values_s: Sequence[float]) -> dict[str, float] | None:
    """mean / median / p90 / p99 in ms, or None when nothing was measured."""
    if len(values_s) == 0:
        return None
    ms = np.asarray(values_s, dtype=float) * 1000.0
    median, p90, p99 = np.percentile(ms, PERCENTILES)
    return {"mean": float(ms.mean()), "median": float(median), "p90": float(p90), "p99": float(p99)}


def steady_summary(windows: dict[int, SteadyWindow | None]) -> dict[str, Any] | None:
    """The kept runs' windows together: their length, tokens and rate, and ramp-up and drain apart."""
    found = [w for w in windows.values() if w is not None]
    if not found:
        return None
    span = sum(w.end_s - w.start_s for w in found)
    ramp, drain = sum(w.ramp_s for w in found), sum(w.drain_s for w in found)
    ramp_tokens, drain_tokens = sum(w.ramp_tokens for w in found), sum(w.drain_tokens for w in found)
    return {
        "runs": len(found),
        "window_s": span,
        "tokens": sum(w.tokens for w in found),
        "window_tok_s": sum(w.tokens for w in found) / span,
        "requests_inside": sum(w.requests_inside for w in found),
        "ramp_s": ramp,
        "ramp_tok_s": ramp_tokens / ramp if ramp > 0 else None,
        "drain_s": drain,
        "drain_tok_s": drain_tokens / drain if drain > 0 else None,
    }


def aggregate(
    records: Sequence[RequestRecord],
    *,
    concurrency: int,
    duration_s: float | None,
    windows: dict[int, SteadyWindow | None] | None = None,
    slo: Slo | None = None,
) -> dict[str, Any]:
    ok = [r for r in records if r.ok]
    failures = Counter(r.error_kind for r in records if not r.ok)
    output_tokens = int(sum(r.completion_tokens or 0 for r in ok))
    timed = [r for r in ok if not r.delivered_in_burst]
    steady = steady_summary(windows or {})
    decoding = timed
    if steady is not None:
        inside_ok = [r for r in ok if (w := (windows or {}).get(r.run)) is not None and inside(r, w.start_s, w.end_s)]
        within = [r for r in inside_ok if not r.delivered_in_burst]
        steady["tpot_from"] = (
            "requests inside the window"
            if within or inside_ok
            else "every request (none lay wholly inside the window: too few prompts for C streams)"
        )
        decoding = within if inside_ok else timed
    tpots = [t for r in decoding if (t := r.tpot) is not None]
    itls = [gap for r in decoding for gap in r.itls]
    out: dict[str, Any] = {
        "requests": len(records),
        "ok": len(ok),
        "failures": dict(sorted((str(k), v) for k, v in failures.items())),
        "input_tokens": int(sum(r.prompt_tokens or 0 for r in ok)),
        "output_tokens": output_tokens,
        "duration_s": duration_s,
        "ttft_ms": distribution([r.ttft for r in ok if r.ttft is not None]),
        "tpot_ms": distribution(tpots),
        "itl_ms": distribution(itls),
        "e2e_ms": distribution([r.e2e for r in ok if r.e2e is not None]),
        "tokens_from_client": sum(1 for r in ok if r.tokens_from == "client"),
        "burst_requests": len(ok) - len(timed),  # no decode timing; TTFT and E2E still counted
    }
    if steady is not None:
        out["steady"] = steady
        out["tpot_all_ms"] = distribution([t for r in timed if (t := r.tpot) is not None])
    median_tpot = float(np.median(tpots)) if tpots else 0.0
    if median_tpot > 0:  # zero when a whole answer arrived in one read: no decode rate to state
        out["per_stream_decode_tok_s"] = 1.0 / median_tpot
        out["aggregate_decode_tok_s"] = concurrency / median_tpot
        out["aggregate_decode_basis"] = "concurrency x 1000 / median TPOT (ms)"
    if duration_s:
        out["e2e_tok_s"] = output_tokens / duration_s
        out["request_per_s"] = len(ok) / duration_s
    if slo is not None:
        out["goodput"] = goodput(records, slo, duration_s)
    spec = spec_per_request(ok)
    if spec is not None:
        out["spec_per_request"] = spec
    if any(r.turn is not None for r in records):
        out["turns"] = turn_summary(ok)
    return out


def spec_per_request(records: Sequence[RequestRecord]) -> dict[str, Any] | None:
    """Speculative decoding per request (vLLM's per-request summary): tokens a verify step, 1 + accepted /
    steps, each request's own, with a t interval of their mean over requests; totals to hold against the
    server's counters."""
    found = [r.spec for r in records if r.spec and r.spec.get("num_spec_steps")]
    if not found:
        return None
    per = np.asarray([1.0 + s.get("num_accepted_draft_tokens", 0.0) / s["num_spec_steps"] for s in found])
    mean = float(per.mean())
    half = float(stats.t.ppf(0.975, len(per) - 1) * per.std(ddof=1) / np.sqrt(len(per))) if len(per) > 1 else math.nan
    return {
        "requests": len(found),
        "tok_per_step_mean": mean,
        "tok_per_step_ci95": [mean - half, mean + half] if len(per) > 1 else None,
        "tok_per_step_min": float(per.min()),
        "tok_per_step_max": float(per.max()),
        "steps": int(sum(s["num_spec_steps"] for s in found)),
        "draft_tokens": int(sum(s.get("num_draft_tokens", 0.0) for s in found)),
        "accepted_tokens": int(sum(s.get("num_accepted_draft_tokens", 0.0) for s in found)),
    }


def turn_summary(records: Sequence[RequestRecord]) -> dict[str, dict[str, Any]]:
    """A multi-turn cell by turn: TTFT, and the share of the prompt the prefix cache held (where measured)."""
    out: dict[str, dict[str, Any]] = {}
    for turn in sorted({r.turn for r in records if r.turn is not None}):
        mine = [r for r in records if r.turn == turn]
        measured = [r for r in mine if r.prefix_hits is not None and r.prompt_tokens]
        prompt = sum(r.prompt_tokens or 0 for r in measured)
        out[str(turn)] = {
            "requests": len(mine),
            "ttft_ms": distribution([r.ttft for r in mine if r.ttft is not None]),
            "prompt_tokens": int(sum(r.prompt_tokens or 0 for r in mine)),
            "prefix_hits": int(sum(r.prefix_hits or 0 for r in measured)) if measured else None,
            "reuse": sum(r.prefix_hits or 0 for r in measured) / prompt if measured and prompt else None,
        }
    return out


def run_duration(records: Sequence[RequestRecord]) -> float | None:
    """Wall time of one run: first send to last end (records of one run share a time base)."""
    ends = [r.end for r in records if r.end is not None]
    if not records or not ends:
        return None
    return max(ends) - min(r.send for r in records)
