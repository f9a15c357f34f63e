"""The SSE decoder: comments never become chunks; events split anywhere still decode."""

import pytest

from forklift.client.sse import SSEDecoder, TooLarge


def test_keepalive_comments_are_dropped():
    decoder = SSEDecoder()
    assert decoder.feed(b': keep-alive\n\ndata: {"a":1}\n\n: ping\n\n') == [b'{"a":1}']


def test_event_split_across_reads_and_crlf():
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a"') == []
    assert decoder.feed(b":2}\r\n\r\ndata: [DONE]\r\n\r\n") == [b'{"a":2}', b"[DONE]"]


def test_multiline_data_and_other_fields():
    decoder = SSEDecoder()
    assert decoder.feed(b"event: message\nid: 7\ndata: line1\ndata:line2\n\n") == [b"line1\nline2"]


def test_event_without_data_is_ignored():
    assert SSEDecoder().feed(b"event: ping\n\nretry: 10\n\n") == []


def test_crlf_split_between_reads_is_one_line_ending():
    """CR at the end of one read and LF at the start of the next end one line, not two (a blank line)."""
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\ndata: b\r") == []
    assert decoder.feed(b"\n\r\n") == [b"a\nb"]


def test_an_event_over_the_limit_is_too_large_whether_or_not_it_ended():
    with pytest.raises(TooLarge, match="without a blank line"):
        SSEDecoder(max_event_bytes=100).feed(b"data: " + b"x" * 100)
    with pytest.raises(TooLarge, match="an SSE event of 106 bytes exceeds the 100-byte limit"):
        SSEDecoder(max_event_bytes=100).feed(b"data: ok\n\ndata: " + b"x" * 100 + b"\n\n")


def test_an_event_at_the_limit_decodes():
    assert SSEDecoder(max_event_bytes=100).feed(b"data: " + b"x" * 94 + b"\n\n") == [b"x" * 94]
