"""Server-sent events, decoded incrementally from the bytes a stream delivers.

Only `data:` fields matter to an OpenAI stream; comment lines (": keep-alive", sent by
proxies and some servers) and other fields are dropped here so they can never be
mistaken for a (zero-token) chunk.

The decoder is linear in its input: a read that ends no event is kept as it is, and the
reads of an event are joined once, when its blank line arrives, so a server that sends
megabytes without a blank line costs what it sends, not its square. A CR ends its line at
once, even last in a read (a LF first in the next read is then its CRLF's), so an event
whose blank line ends the stream on a CR is not lost. An event larger
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
        self._pending: list[bytes] = []  # reads since the last blank line, line endings as LF
        self._pending_bytes = 0
        self._cr = False  # the last read ended on CR: a LF first in the next read belongs to it

    def feed(self, data: bytes) -> list[bytes]:
        if not data:  # nothing, not even the end of a CRLF
            return []
        if self._cr and data.startswith(b"\n"):
            data = data[1:]  # the LF of a CRLF whose CR ended the last read (and its line, then)
        self._cr = data.endswith(b"\r")
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if not data:
            return []
        pending = self._pending
        if pending:
            if b"\n\n" not in data and not (data[:1] == b"\n" and pending[-1].endswith(b"\n")):
                self._keep(data, self._pending_bytes + len(data))  # no event ends here: kept, not re-joined
                return []
            data = b"".join([*pending, data])  # each byte is joined once, when its event ends
            pending.clear()
        *events, rest = data.split(b"\n\n")
        if len(data) > self.max_event_bytes and events and (size := max(map(len, events))) > self.max_event_bytes:
            raise TooLarge(f"an SSE event of {size} bytes exceeds the {self.max_event_bytes}-byte limit")
        if rest:
            self._keep(rest, len(rest))
        payloads = []
        for event in events:
            if event.startswith(b"data: ") and b"\n" not in event:  # the common case, one line
                payloads.append(event[6:])
            elif (payload := _data(event)) is not None:
                payloads.append(payload)
        return payloads

    def _keep(self, piece: bytes, pending_bytes: int) -> None:
        """Hold the start of an unended event, within the event limit (a last LF may be half a blank line)."""
        if pending_bytes - piece.endswith(b"\n") > self.max_event_bytes:
            raise TooLarge(f"an SSE event over {self.max_event_bytes} bytes without a blank line: exceeds the limit")
        self._pending.append(piece)
        self._pending_bytes = pending_bytes


def _data(event: bytes) -> bytes | None:
    """The event's data (its `data:` lines joined by LF), or None for an event without any."""
    lines = [line for line in event.split(b"\n") if line.startswith(b"data:")]
    if not lines:
        return None
    return b"\n".join(line[6:] if line[5:6] == b" " else line[5:] for line in lines)
