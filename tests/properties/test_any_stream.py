"""Property tests of what a server under test sends: any bytes, split into reads anywhere, decode to the same SSE
events as the stream read whole (or the one documented failure, TooLarge); any event payload folds into the record
or is a ValueError (recorded as a protocol failure), never another exception.
"""

from __future__ import annotations

import time
from itertools import pairwise

import orjson
from hypothesis import example, given
from hypothesis import strategies as st

from forklift.client.records import RequestRecord
from forklift.client.sse import SSEDecoder, TooLarge
from forklift.client.stream import _StreamState

# The pieces SSE is made of, mixed with any bytes, so the search reaches line endings split across reads.
SSE_PIECES = st.sampled_from(
    [b"data: ", b"data:", b"data", b": keep-alive", b"event: x", b"id: 1", b"\n", b"\r", b"\r\n", b"\n\n", b"[DONE]"]
)
STREAM = st.lists(st.one_of(SSE_PIECES, st.binary(max_size=12)), max_size=40).map(b"".join)


def reference(stream: bytes) -> list[bytes]:
    """The SSE rule over the whole stream at once: line endings to LF, events at blank lines, `data:` lines kept."""
    *events, _unended = stream.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n\n")
    out = []
    for event in events:
        lines = [line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
        if lines:
            out.append(b"\n".join(lines))
    return out


def decode(stream: bytes, cuts: list[int], limit: int) -> list[bytes] | str:
    """Feed `stream` in reads cut at `cuts`; the events, or "too large"."""
    decoder = SSEDecoder(limit)
    events: list[bytes] = []
    edges = [0, *sorted(cut % (len(stream) + 1) for cut in cuts), len(stream)]
    try:
        for start, end in pairwise(edges):
            events.extend(decoder.feed(stream[start:end]))
    except TooLarge:
        return "too large"
    return events


@given(stream=STREAM, cuts=st.lists(st.integers(min_value=0), max_size=12))
@example(stream=b"data: a\r\ndata: b\r\n\r\n", cuts=[8])  # CR LF split between two reads
@example(stream=b"data: a\n\ndata: b\n\n", cuts=[8])  # a blank line split between two reads
@example(stream=b"data: \n\r", cuts=[])  # found by the long profile: a CR last in the stream ends its line
@example(stream=b"data: \r\ndata: ", cuts=[7, 7])  # found by the long profile: an empty read between CR and LF
def test_the_events_do_not_depend_on_how_the_stream_is_split(stream, cuts):
    assert decode(stream, cuts, limit=len(stream) + 1) == decode(stream, [], limit=len(stream) + 1)
    assert decode(stream, cuts, limit=len(stream) + 1) == reference(stream)


@given(stream=STREAM, cuts=st.lists(st.integers(min_value=0), max_size=12), limit=st.integers(0, 40))
def test_an_event_over_the_limit_is_too_large_however_the_stream_is_split(stream, cuts, limit):
    whole = decode(stream, [], limit)
    assert decode(stream, cuts, limit) == whole
    *events, unended = stream.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n\n")
    unended = unended.removesuffix(b"\n")  # may be half a blank line
    assert (whole == "too large") == any(len(event) > limit for event in [*events, unended]), events


KEYS = st.sampled_from(["choices", "usage", "delta", "text", "content", "finish_reason", "completion_tokens", "error"])
# Chunks shaped like an OpenAI stream's (its keys, mostly), any field any JSON: the fold must not trust a type.
EVENT = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS | st.text(max_size=8), inner, max_size=4),
    max_leaves=16,
)
PAYLOAD = st.one_of(EVENT.map(orjson.dumps), st.binary(max_size=30), st.just(b"[DONE]"))


@given(payloads=st.lists(PAYLOAD, max_size=8))
@example(payloads=[b'{"choices":[{"delta":{"content":"a"}}],"usage":{"completion_tokens":"3"}}'])
@example(payloads=[b'{"choices":[{"text":"a"}]}', b'{"choices":[],"usage":{"completion_tokens":"3"}}', b"[DONE]"])
@example(payloads=[b'{"usage":{"completion_tokens":1' + b"0" * 5000 + b"}}"])
def test_any_event_folds_into_the_record_or_is_a_protocol_failure(payloads):
    record = RequestRecord(prompt_id="p", send=0.0)
    state = _StreamState(record, 0.0)
    try:
        done = any(state.event(payload, time.perf_counter()) for payload in payloads)
    except ValueError:  # the client records it as a protocol failure
        state.finish(time.perf_counter(), cut=True)
        return
    state.finish(time.perf_counter(), cut=not done)
    assert record.error_kind in (None, "stream_cut", "empty")
    if record.ok:
        assert record.chunks or record.completion_tokens
    if record.error_kind == "empty":
        assert not record.chunks and not record.completion_tokens
    RequestRecord.model_validate(record.model_dump(), strict=True)  # the record still holds to its schema
