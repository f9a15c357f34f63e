"""Goodput under stated latency bounds: which requests count, the share and rate, and bad bounds in one line."""

import pytest

from forklift.bench.aggregate import aggregate
from forklift.bench.options import BenchOptions
from forklift.bench.slo import Slo, goodput, parse_slo
from forklift.client.records import RequestRecord
from forklift.errors import UsageError


def rec(prompt_id, send, first, end, tokens):
    """A request whose tokens arrived evenly from its first token to its end."""
    step = (end - first) / (tokens - 1) if tokens > 1 else 0.0
    chunks = [(first + i * step, 1) for i in range(tokens)]
    return RequestRecord(
        prompt_id=prompt_id, send=send, first_token=first, end=end, chunks=chunks, completion_tokens=tokens
    )


RECORDS = [
    rec("fast", 0.0, 0.1, 1.1, 11),  # TTFT 100 ms, TPOT 100 ms, E2E 1100 ms
    rec("slow-start", 0.0, 0.9, 1.9, 11),  # TTFT 900 ms, TPOT 100 ms
    rec("slow-steps", 0.0, 0.1, 3.1, 11),  # TPOT 300 ms
    rec("one-token", 0.0, 0.1, 0.1, 1),  # no TPOT: cannot be shown within a TPOT bound
    RequestRecord(prompt_id="failed", send=0.0, error_kind="http", error="HTTP 500"),
]


@pytest.mark.parametrize(
    ("bounds", "good"),
    [
        ({"ttft": 500}, {"fast", "slow-steps", "one-token"}),
        ({"tpot": 150}, {"fast", "slow-start"}),
        ({"ttft": 500, "tpot": 150}, {"fast"}),
        ({"e2e": 2000}, {"fast", "slow-start", "one-token"}),
    ],
)
def test_a_request_is_good_when_it_finished_within_every_bound(bounds, good):
    slo = Slo.model_validate(bounds)
    assert {r.prompt_id for r in RECORDS if slo.met(r)} == good


def test_goodput_states_its_bounds_share_and_rate_in_the_cell_aggregate():
    out = aggregate(RECORDS, concurrency=1, duration_s=4.0, slo=parse_slo("ttft=500, tpot=150"))
    assert out["goodput"] == {
        "bounds_ms": {"ttft": 500.0, "tpot": 150.0},
        "good": 1,
        "requests": 5,
        "share": 0.2,
        "good_per_s": 0.25,
    }
    assert "goodput" not in aggregate(RECORDS, concurrency=1, duration_s=4.0)
    assert goodput([], Slo(e2e=1.0), None) == {
        "bounds_ms": {"e2e": 1.0},
        "good": 0,
        "requests": 0,
        "share": None,
        "good_per_s": None,
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ttft", "--slo 'ttft': expected NAME=MS pairs, NAME one of ttft, tpot, e2e"),
        ("itl=5", "--slo 'itl=5': expected NAME=MS pairs, NAME one of ttft, tpot, e2e"),
        ("ttft=-1", "--slo 'ttft=-1': ttft: Input should be greater than 0"),
        ("ttft=fast", "--slo 'ttft=fast': ttft: Input should be a valid number"),
        ("ttft=1\nrm", "--slo 'ttft=1\\nrm': ttft: Input should be a valid number"),
    ],
)
def test_bad_bounds_are_one_line_naming_the_flag(text, message):
    with pytest.raises(UsageError) as caught:
        BenchOptions(url="http://127.0.0.1:1", synthetic="8:8", slo=text)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
