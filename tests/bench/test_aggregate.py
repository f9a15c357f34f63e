"""Per-cell aggregates: definitions as vLLM's, failures by kind, decode rates stated with their basis."""

import pytest

from forklift.bench.aggregate import aggregate, distribution, run_duration
from forklift.client.records import RequestRecord


def rec(send, first, chunks, **kw):
    return RequestRecord(
        prompt_id="p",
        send=send,
        first_token=first,
        end=chunks[-1][0],
        chunks=chunks,
        completion_tokens=sum(n for _, n in chunks),
        prompt_tokens=10,
        tokens_from="usage",
        **kw,
    )


def test_aggregate_numbers():
    records = [
        rec(0.0, 0.1, [(0.1, 1), (0.2, 1), (0.3, 1)]),  # TPOT 100 ms
        rec(0.0, 0.2, [(0.2, 1), (0.6, 4)]),  # TPOT 100 ms, ITL 4 x 100 ms
        RequestRecord(prompt_id="x", send=0.0, error_kind="http", error="HTTP 500"),
        RequestRecord(prompt_id="y", send=0.0, error_kind="timeout", error="slow"),
    ]
    out = aggregate(records, concurrency=2, duration_s=0.6)
    assert out["requests"] == 4 and out["ok"] == 2
    assert out["failures"] == {"http": 1, "timeout": 1}
    assert out["output_tokens"] == 8 and out["input_tokens"] == 20
    assert out["ttft_ms"]["mean"] == pytest.approx(150.0)
    assert out["tpot_ms"]["median"] == pytest.approx(100.0)
    assert out["itl_ms"]["median"] == pytest.approx(100.0) and out["itl_ms"]["p99"] == pytest.approx(100.0)
    assert out["per_stream_decode_tok_s"] == pytest.approx(10.0)
    assert out["aggregate_decode_tok_s"] == pytest.approx(20.0) and "median TPOT" in out["aggregate_decode_basis"]
    assert out["e2e_tok_s"] == pytest.approx(8 / 0.6)


def test_percentiles():
    d = distribution([i / 1000 for i in range(1, 101)])
    assert d["median"] == pytest.approx(50.5) and d["p90"] == pytest.approx(90.1) and d["p99"] == pytest.approx(99.01)
    assert distribution([]) is None


def test_nothing_measured():
    out = aggregate([], concurrency=1, duration_s=None)
    assert out["ok"] == 0 and out["ttft_ms"] is None and "aggregate_decode_tok_s" not in out
    assert run_duration([]) is None


def test_burst_delivered_requests_are_counted_and_left_out_of_decode_timing():
    timed = rec(0.0, 0.1, [(0.1, 1), (0.2, 1), (0.3, 1)])  # TPOT 100 ms
    burst = rec(0.0, 0.3, [(0.3, 1), (0.3, 1), (0.30001, 1)])  # every chunk in one read: TPOT ~0
    out = aggregate([timed, burst], concurrency=1, duration_s=0.3)
    assert out["burst_requests"] == 1 and out["ok"] == 2
    assert out["tpot_ms"]["mean"] == pytest.approx(100.0)  # the burst's ~0 ms does not drag the mean down
    assert out["itl_ms"]["p99"] == pytest.approx(100.0)
    assert out["per_stream_decode_tok_s"] == pytest.approx(10.0)
    assert out["ttft_ms"]["mean"] == pytest.approx(200.0)  # TTFT keeps both: the burst's first token waited too
