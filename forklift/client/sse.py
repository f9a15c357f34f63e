"""Server-sent events, decoded incrementally from the bytes a stream delivers.

Only `data:` fields matter to an OpenAI stream; comment lines (": keep-alive", sent by
proxies and some servers) and other fields are dropped here so they can never be
mistaken for a (zero-token) chunk.

The decoder is linear in its input: each read is normalised and searched once (a line
ending split across two reads is held back, never re-scanned), so a server that sends
megabytes without a blank line costs what it sends, not its square. An event larger
than the decoder's limit is a failure (`TooLarge`), not memory spent without bound.
"""

from __future__ import annotations

# Far above any OpenAI stream event (a chunk of a few tokens with running usage is under 1 KiB).
MAX_EVENT_BYTES = 8 * 2**20


class TooLarge(Exception):
    """A server sent more than forklift reads: an event, a response or an error body over its limit."""


class SSEDecoder:
    """Feed raw bytes, get back the data payload of every complete event, in order."""

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self.max_event_bytes = max_event_bytes
        self._buffer = bytearray()  # the start of an event whose blank line has not arrived, line endings as LF
        self._cr = False  # the last read ended on CR: a LF first in the next read is the same line ending

    def feed(self, data: bytes) -> list[bytes]:
        if self._cr:
            data, self._cr = b"\r" + data, False
        if b"\r" in data:
            if data.endswith(b"\r"):
                data, self._cr = data[:-1], True
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buffer = self._buffer
        search = max(len(buffer) - 1, 0)  # a blank line may start on the buffer's last byte, not before
        buffer += data
        payloads: list[bytes] = []
        start = 0
        while (end := buffer.find(b"\n\n", search)) >= 0:
            if end - start > self.max_event_bytes:
                raise TooLarge(f"an SSE event of {end - start} bytes exceeds the {self.max_event_bytes}-byte limit")
            payload = _data(bytes(buffer[start:end]))
            if payload is not None:
                payloads.append(payload)
            start = search = end + 2
        del buffer[:start]  # CPython advances a bytearray's start in place: no copy of the rest
        if len(buffer) > self.max_event_bytes:
            raise TooLarge(
                f"an SSE event over {self.max_event_bytes} bytes without a blank line: exceeds the event limit"
            )
        return payloads


def _data(event: bytes) -> bytes | None:
    """The event's data (its `data:` lines joined by LF), or None for an event without any."""
    if event.startswith(b"data: ") and b"\n" not in event:  # the common case, one line
        return event[6:]
    lines = [line for line in event.split(b"\n") if line.startswith(b"data:")]
    if not lines:
        return None
    return b"\n".join(line[6:] if line[5:6] == b" " else line[5:] for line in lines)
