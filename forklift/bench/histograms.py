"""The server's own latency histograms (vLLM's /metrics): their movement over a run, and its medians.

They are the ground truth the client is held to: the engine times TTFT from the moment its
frontend received the request, so its TTFT excludes the client's connect and send, and its
per-request TPOT is the engine's own (E2E - TTFT) / (tokens - 1). Its queue and prefill
histograms split a TTFT where the engine core saw it: waiting to be scheduled, then scheduled
until the step that made the first token; the engine's TTFT less both is the frontend's share
(taking the request in, the hop to the engine core and back, the first token out). A median of a histogram is
interpolated linearly within the bucket it falls in (as Prometheus' histogram_quantile does),
so it is exactly as fine as the bucket bounds, which are kept beside it.
"""

from __future__ import annotations

import math

from forklift.bench.metrics import Snapshot
from forklift.bench.schema import ServerLatency

# Latency roles of the engine adapter's metric names -> the ServerLatency field they fill.
LATENCY_ROLES = {
    "ttft_histogram": "ttft",
    "tpot_histogram": "tpot",
    "itl_histogram": "itl",
    "e2e_histogram": "e2e",
    "queue_histogram": "queue",
    "prefill_histogram": "prefill",
}

Buckets = dict[float, float]  # upper bound (s) -> cumulative count; SUM holds the sum of the observations
SUM = -1.0


def buckets(snapshot: Snapshot, family: str) -> Buckets:
    """Cumulative counts by upper bound, summed over every other label (engines, models), and the sum."""
    out: Buckets = {}
    for labels, value in snapshot.get(family + "_bucket", {}).items():
        bound = dict(labels).get("le")
        if bound is not None:
            key = math.inf if bound in ("+Inf", "inf") else float(bound)
            out[key] = out.get(key, 0.0) + value
    if out:
        out[SUM] = sum(snapshot.get(family + "_sum", {}).values())
    return out


def delta(before: Buckets, after: Buckets) -> Buckets:
    return {bound: count - before.get(bound, 0.0) for bound, count in after.items()}


def add(total: Buckets, more: Buckets) -> Buckets:
    return {bound: total.get(bound, 0.0) + more.get(bound, 0.0) for bound in set(total) | set(more)}


def median(hist: Buckets) -> tuple[float, tuple[float, float]] | None:
    """(median, (bucket lower, upper)) in seconds, linear within the bucket; None when empty.

    A median in the open top bucket (+Inf) is reported as that bucket's lower bound.
    """
    bounds = sorted(b for b in hist if b != SUM)
    if not bounds or hist[bounds[-1]] <= 0:
        return None
    half = hist[bounds[-1]] / 2.0
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = hist[bound]
        if count >= half:
            if math.isinf(bound):
                return lower, (lower, bound)
            inside = count - below
            fraction = (half - below) / inside if inside > 0 else 0.0
            return lower + fraction * (bound - lower), (lower, bound)
        lower, below = bound, count
    return None


def server_latency(hists: dict[str, Buckets]) -> ServerLatency | None:
    """The medians of each latency role's delta histogram, in ms; None when the server has none of them."""
    if not any(hists.values()):
        return None
    fields: dict[str, object] = {}
    for role, name in LATENCY_ROLES.items():
        found = median(hists.get(role, {}))
        if found is not None:
            value, (lo, hi) = found
            fields[f"{name}_ms"] = value * 1000.0
            fields[f"{name}_bucket_ms"] = (lo * 1000.0, hi * 1000.0)
            fields[f"{name}_mean_ms"] = hists[role][SUM] / hists[role][math.inf] * 1000.0
    ttft = hists.get("ttft_histogram", {})
    requests = int(ttft.get(math.inf, 0))
    return ServerLatency(requests=requests, **fields)  # type: ignore[arg-type]


def run_histograms(before: Snapshot, after: Snapshot, names: dict[str, str]) -> dict[str, Buckets]:
    """Each latency role's histogram delta over one run (only the roles the server exposes)."""
    return {
        role: delta(buckets(before, names[role]), buckets(after, names[role]))
        for role in LATENCY_ROLES
        if role in names and names[role] + "_bucket" in after
    }
