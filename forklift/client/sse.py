"""Server-sent events, decoded incrementally from the bytes a stream delivers.

Only `data:` fields matter to an OpenAI stream; comment lines (": keep-alive", sent by
proxies and some servers) and other fields are dropped here so they can never be
mistaken for a (zero-token) chunk.
"""

from __future__ import annotations


class SSEDecoder:
    """Feed raw bytes, get back the data payload of every complete event, in order."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[bytes]:
        buffer = self._buffer + data
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *events, self._buffer = buffer.split(b"\n\n")
        payloads = []
        for event in events:
            if event.startswith(b"data: ") and b"\n" not in event:  # the common case, one line
                payloads.append(event[6:])
                continue
            lines = [line for line in event.split(b"\n") if line.startswith(b"data:")]
            if lines:
                payloads.append(b"\n".join(line[6:] if line[5:6] == b" " else line[5:] for line in lines))
        return payloads
