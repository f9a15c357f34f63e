"""The async OpenAI-compatible streaming client: one request in, one RequestRecord out.

Built on aiohttp: benchmarks/client_throughput.py measures it against httpx on the same
fake server (aiohttp reads raw stream bytes several times faster), and the client's hot
path is a read, an SSE split and an orjson parse per chunk.

Per-chunk token counts come from vLLM's running usage (`continuous_usage_stats`), which
is exact under speculative decoding, where one chunk carries several tokens. A server
that ignores it gets one token per content chunk, and the record says so.

The server is not trusted: a redirect is never followed, the stream is asked for and read
uncompressed (no decompression bomb), every answer and error body is read up to a byte
limit, and `timeout` is one wall-clock deadline over the whole exchange, whatever the
server sends or withholds (headers, a byte a second, an endless stream).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlsplit

import aiohttp
import orjson

from forklift.client.bodies import read_start, refuse_encoded
from forklift.client.records import Endpoint, RequestRecord
from forklift.client.sse import MAX_EVENT_BYTES, SSEDecoder, TooLarge
from forklift.fsio import env_number

PATHS: dict[str, str] = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}
STREAM_OPTIONS = {"include_usage": True, "continuous_usage_stats": True}
REDIRECTS = range(300, 400)
ERROR_TEXT_CHARS = 300  # of an error body, kept in the record


@dataclass(frozen=True)
class Limits:
    """What forklift reads of one answer; a server that sends more is a failed request (`too_large`).

    Besides these, an answer may not hold many more content chunks than the tokens its request asked for
    (max_tokens x n): a server may split one token's text over a few chunks (transformers serve does), so
    the bound is CHUNKS_PER_TOKEN chunks a token plus a few for role and finish chunks: a memory guard.
    """

    # A 32k-token answer with running usage is about 10 MiB of stream; the record of one this size holds ~400k
    # chunks, which keeps a bench under 512 MiB resident.
    response_bytes: int = 32 * 2**20
    # An error body is read this far and no further; its first ERROR_TEXT_CHARS characters are kept.
    error_bytes: int = 64 * 2**10
    event_bytes: int = MAX_EVENT_BYTES

    ENV: ClassVar[dict[str, str]] = {
        "response_bytes": "FORKLIFT_RESPONSE_MAX_BYTES",
        "error_bytes": "FORKLIFT_ERROR_BODY_MAX_BYTES",
        "event_bytes": "FORKLIFT_SSE_EVENT_MAX_BYTES",
    }

    @classmethod
    def from_env(cls) -> Limits:
        """The defaults, each replaced by its FORKLIFT_*_MAX_BYTES variable when set (a bad value is one line)."""
        values = {}
        for name, var in cls.ENV.items():
            if (given := env_number(var, whole=True, unit=" of bytes")) is not None:
                values[name] = int(given)
        return cls(**values)


@dataclass(frozen=True)
class PreparedRequest:
    """A request ready to send: the workload item after sampling and salt were applied."""

    prompt_id: str
    endpoint: Endpoint
    body: dict[str, Any] = field(default_factory=dict)


class StreamClient:
    """One HTTP session (a connection pool) shared by every request of a bench."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 600.0,
        connections: int = 1024,
        api_key: str | None = None,
        limits: Limits | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.connections = connections
        self.limits = limits or Limits.from_env()
        # identity: a compressed answer could decode to far more than its bytes on the wire (a gzip bomb)
        self.headers = {"Accept-Encoding": "identity"} | ({"Authorization": f"Bearer {api_key}"} if api_key else {})
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> StreamClient:
        connector = aiohttp.TCPConnector(limit=self.connections, limit_per_host=self.connections)
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers=self.headers,
            timeout=aiohttp.ClientTimeout(total=self.timeout),
            auto_decompress=False,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("StreamClient used outside `async with`")
        return self._session

    async def send(self, request: PreparedRequest, *, zero: float, run: int = 0) -> RequestRecord:
        record = RequestRecord(prompt_id=request.prompt_id, run=run, send=time.perf_counter() - zero)
        await self.fill(record, request, zero)
        return record

    async def fill(
        self, record: RequestRecord, request: PreparedRequest, zero: float, text: list[str] | None = None
    ) -> None:
        """Send `request` and fill `record` in place; failures land in the record, never raise.

        With `text`, the answer's text is appended to it as it arrives (a conversation feeds it back);
        a record keeps only its digest.

        Cancellation (Ctrl-C) marks the record interrupted and propagates, so the caller can
        still keep what was measured.
        """
        record.send = time.perf_counter() - zero
        body = {**request.body, "stream": True, "stream_options": STREAM_OPTIONS}
        try:
            # one exact deadline over the whole exchange (aiohttp's own rounds up to whole seconds)
            await asyncio.wait_for(self._exchange(PATHS[request.endpoint], body, record, zero, text), self.timeout)
        except asyncio.CancelledError:
            _fail(record, "interrupted", "cancelled mid-request")
            raise
        except asyncio.TimeoutError:
            _fail(record, "timeout", f"no complete answer within {self.timeout:g}s")
        except TooLarge as exc:
            _fail(record, "too_large", str(exc))
        except aiohttp.ClientConnectorError as exc:
            _fail(record, "connect", f"cannot connect to {self.base_url}: {exc.os_error}")
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            kind = "stream_cut" if await self.server_alive() else "server_gone"
            _fail(record, kind, f"{type(exc).__name__}: {exc}")
        except (ValueError, aiohttp.ClientError) as exc:  # a bad answer, or a URL aiohttp cannot use
            _fail(record, "protocol", f"{type(exc).__name__}: {exc}")
        finally:
            if record.end is None:  # a failure before the stream: when the client stopped waiting
                record.end = time.perf_counter() - zero

    async def server_alive(self) -> bool:
        """Whether the server still accepts connections: tells a cut stream from a dead server."""
        parts = urlsplit(self.base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(parts.hostname, port), 2.0)
        except (OSError, asyncio.TimeoutError):
            return False
        writer.close()
        return True

    async def _exchange(
        self, path: str, body: dict[str, Any], record: RequestRecord, zero: float, text: list[str] | None
    ) -> None:
        async with self.session.post(self.base_url + path, json=body, allow_redirects=False) as response:
            record.status = response.status
            encoding = response.headers.get("Content-Encoding", "identity")
            if response.status in REDIRECTS:
                location = response.headers.get("Location", "")[:200]
                _fail(
                    record, "redirect", f"HTTP {response.status} to {location!r} not followed: --url must be the server"
                )
                return
            if response.status != 200:
                _fail(record, "http", f"HTTP {response.status}: {await self._error_text(response, encoding)}")
                return
            refuse_encoded(response)
            stream = _StreamState(record, zero, _chunk_bound(body), text)
            decoder = SSEDecoder(self.limits.event_bytes)
            limit = self.limits.response_bytes
            received = 0
            try:
                async for data in response.content.iter_any():
                    now = time.perf_counter()
                    received += len(data)
                    if received > limit:
                        raise TooLarge(f"the answer exceeded the {limit}-byte response limit")
                    for payload in decoder.feed(data):
                        if stream.event(payload, now):
                            stream.finish(now)
                            return
            except BaseException:
                stream.finish(time.perf_counter(), cut=True)  # keep what arrived; the caller names the failure
                raise
            stream.finish(time.perf_counter(), cut=True)

    async def _error_text(self, response: aiohttp.ClientResponse, encoding: str) -> str:
        """The start of an error body, read no further than the error-body limit."""
        if encoding.lower() != "identity":
            return f"(a {encoding[:40]!r}-encoded body, not read)"
        body = await read_start(response, self.limits.error_bytes)
        return body.decode(errors="replace")[:ERROR_TEXT_CHARS].replace("\n", " ")


# vLLM's per-request speculative decoding summary (--per-request-spec-decode-metrics, vLLM >= 0.29): the
# counts kept; its arrays (acceptance histogram, `detailed` per-step lists) are left out of the record.
SPEC_FIELDS = (
    "num_spec_steps",
    "num_draft_tokens",
    "num_accepted_draft_tokens",
    "mean_acceptance_length",
    "draft_acceptance_rate",
)


def spec_summary(found: dict[str, Any]) -> dict[str, float] | None:
    """The numeric summary fields, finite and not negative; anything else is left out, never guessed."""
    kept: dict[str, float] = {}
    for name in SPEC_FIELDS:
        value = found.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
            kept[name] = float(value)
    return kept or None


class _StreamState:
    """Folds the events of one stream into its record (the client's hot path: keep it lean)."""

    def __init__(
        self, record: RequestRecord, zero: float, max_chunks: int | None = None, text: list[str] | None = None
    ):
        self.record = record
        self.zero = zero
        self.max_chunks = max_chunks
        self.chunks: list[tuple[float, int]] = []
        self.digest = hashlib.sha256()  # of the text, as it arrives: the text itself is kept only in `text`
        self.text = text
        self.usage: dict[str, Any] | None = None
        self.seen_tokens = 0  # running completion_tokens from continuous usage
        self.continuous = False

    def event(self, payload: bytes, now: float) -> bool:
        """Fold one SSE data payload in; True at the end of the stream."""
        if payload == b"[DONE]":
            return True
        obj = orjson.loads(payload)
        if not isinstance(obj, dict):
            raise ValueError(f"stream event is not a JSON object: {payload[:120]!r}")
        try:
            return self._fold(obj, now)
        except (AttributeError, TypeError, KeyError) as exc:  # fields of the wrong type, e.g. `choices: [null]`
            raise ValueError(f"malformed stream event {payload[:120]!r}: {type(exc).__name__}: {exc}") from None

    def _fold(self, obj: dict[str, Any], now: float) -> bool:
        if "error" in obj:
            error = obj["error"]
            raise ValueError(
                f"server error in stream: {error.get('message', error) if isinstance(error, dict) else error}"
            )
        usage = obj.get("usage")
        if usage:
            if not isinstance(usage, dict):  # finish() reads it after the stream
                raise TypeError("usage is not an object")
            for key in ("prompt_tokens", "completion_tokens"):  # into the record as they are: counts or nothing
                count = usage.get(key)
                if count is not None and (type(count) is not int or count < 0):
                    raise TypeError(f"usage {key} is {str(count)[:40]!r}, not a count")
            self.usage = usage
        metrics = obj.get("metrics")  # vLLM's per-request metrics, on the final usage chunk
        if isinstance(metrics, dict) and isinstance(metrics.get("speculative_decoding"), dict):
            self.record.spec = spec_summary(metrics["speculative_decoding"])
        choices = obj.get("choices")
        if not choices:
            return False
        text = ""
        for choice in choices:
            delta = choice.get("delta")
            if delta is not None:
                text += (delta.get("content") or "") + (delta.get("reasoning_content") or delta.get("reasoning") or "")
            else:
                text += choice.get("text") or ""
            if choice.get("finish_reason"):
                self.record.finish_reason = choice["finish_reason"]
        done = usage.get("completion_tokens") if usage else None
        if done is not None:
            self.continuous = True
            tokens = done - self.seen_tokens
            self.seen_tokens = done
        else:
            tokens = 1 if text else 0
        if tokens > 0 or text:
            if len(self.chunks) == self.max_chunks:
                raise TooLarge(f"more than {self.max_chunks} content chunks for the tokens asked for (max_tokens x n)")
            self.chunks.append((now - self.zero, tokens))
            self.digest.update(text.encode(errors="surrogatepass"))
            if self.text is not None:
                self.text.append(text)
        return False

    def finish(self, now: float, cut: bool = False) -> None:
        record = self.record
        record.end = now - self.zero
        record.chunks = self.chunks
        record.first_token = self.chunks[0][0] if self.chunks else None
        record.output_sha256 = self.digest.hexdigest()
        record.chunk_tokens_from = "usage" if self.continuous else "one_per_chunk"
        if self.usage and self.usage.get("completion_tokens") is not None:
            record.completion_tokens = self.usage["completion_tokens"]
            record.prompt_tokens = self.usage.get("prompt_tokens")
            record.tokens_from = "usage"
        else:
            record.completion_tokens = sum(tokens for _, tokens in record.chunks)
            record.tokens_from = "client"
        # A server that closes after its finish_reason without [DONE] has still finished.
        if cut and record.finish_reason is None:
            _fail(record, "stream_cut", "stream ended before [DONE] and without a finish_reason")
        elif not self.chunks and not record.completion_tokens:
            _fail(record, "empty", "empty answer: the stream ended without text or tokens")


CHUNKS_PER_TOKEN = 4


def _chunk_bound(body: dict[str, Any]) -> int | None:
    """The most content chunks an answer may hold: CHUNKS_PER_TOKEN per token the request allows
    (max_tokens x n) and a few more, when the request says; else only the byte limits hold."""
    most = body.get("max_tokens") or body.get("max_completion_tokens")
    n = body.get("n") or 1
    if type(most) is int and type(n) is int and most > 0 and n > 0:
        return CHUNKS_PER_TOKEN * most * n + 16
    return None


def _fail(record: RequestRecord, kind: str, message: str) -> None:
    record.error_kind = kind  # type: ignore[assignment]
    record.error = message
