"""Record arithmetic: TPOT per vLLM, ITL divided across multi-token chunks (vLLM issue 27485)."""

import pytest

from forklift.client.records import RequestRecord


def record(chunks):
    return RequestRecord(
        prompt_id="p",
        send=0.0,
        first_token=chunks[0][0],
        end=chunks[-1][0],
        chunks=chunks,
        completion_tokens=sum(n for _, n in chunks),
    )


def test_itl_divides_a_chunk_gap_across_its_tokens():
    r = record([(0.1, 1), (0.2, 1), (0.5, 3)])
    assert r.itls == pytest.approx([0.1, 0.1, 0.1, 0.1])


def test_tpot_excludes_first_token():
    r = record([(0.1, 1), (0.2, 1), (0.5, 3)])
    assert r.tpot == pytest.approx((0.5 - 0.1) / 4)
    assert r.ttft == pytest.approx(0.1)
    assert r.decode_tps == pytest.approx(10.0)


def test_extra_tokens_in_first_chunk_belong_to_ttft():
    assert record([(0.1, 3), (0.3, 2)]).itls == pytest.approx([0.1, 0.1])


def test_zero_token_chunks_add_no_itl():
    assert record([(0.1, 1), (0.2, 0), (0.4, 1)]).itls == pytest.approx([0.2])


def test_single_token_has_no_tpot():
    assert record([(0.1, 1)]).tpot is None
