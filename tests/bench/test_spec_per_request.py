"""Speculative decoding per request: vLLM's per-request summary read off the stream, and its interval.

The summary's shape is vLLM's (`metrics.speculative_decoding` on the final usage chunk, 0.29 and later);
tests/bench/test_engine.py reads it off the real engine and holds its sums to the server's counters.
"""

import math

import pytest
from scipy import stats

from forklift.bench.aggregate import spec_per_request
from forklift.client.records import RequestRecord
from forklift.client.stream import spec_summary

VLLM_SUMMARY = {
    "mean_acceptance_length": 2.5,
    "draft_acceptance_rate": 0.5,
    "acceptance_histogram": [1, 0, 1, 0],
    "num_spec_steps": 2,
    "num_accepted_draft_tokens": 3,
    "num_draft_tokens": 6,
    "num_spec_tokens": 3,
}


def test_the_summary_keeps_its_counts_and_drops_the_arrays():
    assert spec_summary(VLLM_SUMMARY) == {
        "num_spec_steps": 2.0,
        "num_draft_tokens": 6.0,
        "num_accepted_draft_tokens": 3.0,
        "mean_acceptance_length": 2.5,
        "draft_acceptance_rate": 0.5,
    }


@pytest.mark.parametrize("bad", ["3", True, -1, math.inf, math.nan, None, [3], {"n": 3}])
def test_a_field_that_is_not_a_finite_count_is_left_out_never_guessed(bad):
    kept = spec_summary({**VLLM_SUMMARY, "num_accepted_draft_tokens": bad})
    assert kept is not None and "num_accepted_draft_tokens" not in kept
    assert spec_summary({"num_spec_steps": bad}) is None


def test_tokens_a_step_per_request_with_a_t_interval_over_requests():
    accepted = [3, 1, 6, 2]  # of 4 steps each: 1.75, 1.25, 2.5, 1.5 tokens a step
    records = [
        RequestRecord(
            prompt_id=f"p{i}",
            send=0.0,
            end=1.0,
            spec={"num_spec_steps": 4.0, "num_accepted_draft_tokens": float(a), "num_draft_tokens": 12.0},
        )
        for i, a in enumerate(accepted)
    ]
    records.append(RequestRecord(prompt_id="no-drafts", send=0.0, end=1.0, spec={"num_spec_steps": 0.0}))
    out = spec_per_request(records)
    per = [1 + a / 4 for a in accepted]
    half = stats.t.ppf(0.975, 3) * stats.tstd(per) / 2
    assert out["requests"] == 4 and out["tok_per_step_mean"] == pytest.approx(1.75)
    assert out["tok_per_step_ci95"] == pytest.approx([1.75 - half, 1.75 + half])
    assert (out["steps"], out["draft_tokens"], out["accepted_tokens"]) == (16, 48, 12)
    assert spec_per_request(records[:1])["tok_per_step_ci95"] is None  # one request: no interval
    assert spec_per_request([RequestRecord(prompt_id="x", send=0.0, end=1.0)]) is None
