"""The server's latency histograms: parsed from vLLM's exposition text, their delta over a run, mean and median."""

import math

import pytest

from forklift.bench.histograms import buckets, delta, median, run_histograms, server_latency
from forklift.bench.metrics import metric_names, parse_snapshot

BOUNDS = (0.001, 0.005, 0.01, 0.02, 0.04)


def exposition(counts: tuple[int, ...], total: float, engine: str = "0") -> str:
    """vLLM's TTFT histogram as its /metrics writes it (cumulative buckets, +Inf, count, sum)."""
    labels = f'engine="{engine}",model_name="tiny"'
    lines = ["# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.",
             "# TYPE vllm:time_to_first_token_seconds histogram"]  # fmt: skip
    for bound, count in zip((*BOUNDS, "+Inf"), counts, strict=True):
        lines.append(f'vllm:time_to_first_token_seconds_bucket{{{labels},le="{bound}"}} {count}.0')
    lines.append(f"vllm:time_to_first_token_seconds_count{{{labels}}} {counts[-1]}.0")
    lines.append(f"vllm:time_to_first_token_seconds_sum{{{labels}}} {total}")
    return "\n".join(lines) + "\n"


def test_delta_median_interpolates_within_its_bucket_and_the_mean_is_exact():
    names = metric_names("vllm")
    before = parse_snapshot(exposition((0, 2, 2, 2, 2, 2), 0.006))
    after = parse_snapshot(exposition((0, 2, 4, 10, 12, 12), 0.2))
    moved = run_histograms(before, after, names)
    latency = server_latency(moved)
    assert latency is not None and latency.requests == 10
    # 10 new observations: 2 in (5, 10] ms, 6 in (10, 20], 2 in (20, 40]; the 5th lies 3/6 into (10, 20]
    assert latency.ttft_ms == pytest.approx(15.0) and latency.ttft_bucket_ms == (10.0, 20.0)
    assert latency.ttft_mean_ms == pytest.approx((0.2 - 0.006) / 10 * 1000)
    assert latency.tpot_ms is None  # the server exposed no TPOT histogram here


def test_engines_are_summed_and_a_median_in_the_open_top_bucket_is_its_lower_bound():
    text = exposition((0, 0, 0, 0, 0, 3), 1.5) + exposition((0, 0, 0, 0, 0, 1), 0.5, engine="1").split("\n", 2)[2]
    hist = buckets(parse_snapshot(text), "vllm:time_to_first_token_seconds")
    assert hist[math.inf] == 4
    assert median(delta({}, hist)) == (0.04, (0.04, math.inf))


def test_no_histograms_no_latency():
    assert server_latency({}) is None
    assert median({}) is None


def test_queue_and_prefill_fill_their_own_fields_beside_ttft():
    """vLLM's queue and prefill histograms (the engine core's share of a TTFT) are read as their own roles."""
    names = metric_names("vllm")

    def renamed(text: str, name: str) -> str:
        return text.replace("vllm:time_to_first_token_seconds", name)

    before = exposition((0, 0, 0, 0, 0, 0), 0.0)
    after = exposition((0, 0, 4, 4, 4, 4), 0.032)
    queue = (
        renamed(before, names["queue_histogram"]),
        renamed(exposition((4, 4, 4, 4, 4, 4), 0.0004), names["queue_histogram"]),
    )
    prefill = (
        renamed(before, names["prefill_histogram"]),
        renamed(exposition((0, 4, 4, 4, 4, 4), 0.012), names["prefill_histogram"]),
    )
    moved = run_histograms(
        parse_snapshot(before + queue[0] + prefill[0]), parse_snapshot(after + queue[1] + prefill[1]), names
    )
    latency = server_latency(moved)
    assert latency is not None and latency.requests == 4
    assert latency.ttft_mean_ms == pytest.approx(8.0)
    assert latency.queue_mean_ms == pytest.approx(0.1) and latency.queue_bucket_ms == (0.0, 1.0)
    assert latency.prefill_mean_ms == pytest.approx(3.0) and latency.prefill_bucket_ms == (1.0, 5.0)
