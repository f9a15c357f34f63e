"""The steady-state window of a closed-loop run: where it opens and closes, what lies inside, ramp and drain apart."""

from forklift.bench.aggregate import aggregate
from forklift.bench.steady import steady_records, steady_window
from forklift.client.records import RequestRecord


def request(pid: str, send: float, end: float, step: float = 0.01) -> RequestRecord:
    """A request decoding one token every `step` seconds from send + step to end."""
    times = [send + step * (k + 1) for k in range(round((end - send) / step))]
    return RequestRecord(
        prompt_id=pid,
        send=send,
        first_token=times[0],
        end=times[-1],
        chunks=[(t, 1) for t in times],
        completion_tokens=len(times),
        tokens_from="usage",
    )


def closed_loop() -> list[RequestRecord]:
    """C=2, four requests: two start at 0; each next one starts when one ends (0.5, 0.6); the last end at 1.0/1.1."""
    return [request("a", 0.0, 0.5), request("b", 0.0, 0.6), request("c", 0.5, 1.0), request("d", 0.6, 1.1)]


def test_the_window_opens_at_the_c_th_send_and_closes_at_the_first_end_after_the_last_send():
    window = steady_window(closed_loop(), 2)
    assert window is not None
    assert (window.start_s, window.end_s) == (0.0, 1.0)
    assert window.requests_inside == 3  # a, b, c; d ends in the drain
    assert round(window.drain_s, 6) == 0.1 and window.drain_tokens == 10
    assert window.ramp_s == 0.0 and window.ramp_tokens == 0
    assert [r.prompt_id for r in steady_records(closed_loop(), window)] == ["a", "b", "c"]


def test_a_ramp_is_measured_apart_when_sends_are_staggered():
    records = [request("a", 0.0, 0.5), request("b", 0.2, 0.6), request("c", 0.5, 1.0)]
    window = steady_window(records, 2)
    assert window is not None and window.start_s == 0.2 and window.ramp_s == 0.2
    assert window.ramp_tokens == 19  # a's tokens before b was sent (the one at 0.2 opens the window)


def test_single_stream_window_is_the_whole_run_and_too_few_prompts_have_none():
    records = [request("a", 0.0, 0.5), request("b", 0.5, 1.0)]
    window = steady_window(records, 1)
    assert window is not None and (window.start_s, window.end_s, window.requests_inside) == (0.0, 1.0, 2)
    assert steady_window(records, 4) is None  # four streams never ran together


def test_tpot_comes_from_requests_inside_the_window_and_every_requests_is_kept_beside_it():
    records = closed_loop()
    records[3] = request("d", 0.6, 1.1, step=0.05)  # the drain: alone on the server, another pace
    out = aggregate(records, concurrency=2, duration_s=1.1, windows={0: steady_window(records, 2)})
    assert round(out["tpot_ms"]["median"], 6) == 10.0  # a, b, c
    assert out["tpot_all_ms"]["p99"] > 40.0  # d is kept there
    assert out["steady"]["requests_inside"] == 3 and out["steady"]["tpot_from"] == "requests inside the window"
    assert out["ttft_ms"]["p99"] > 40.0  # TTFT keeps every request
