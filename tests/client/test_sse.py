"""The SSE decoder: comments never become chunks; events split anywhere still decode."""

from forklift.client.sse import SSEDecoder


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
