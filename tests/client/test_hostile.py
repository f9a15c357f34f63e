"""The streaming client against hostile servers: each server here is a FAKE (aiohttp or raw asyncio on 127.0.0.1),
because no real server redirects, bombs, trickles or stalls on demand.

Each test states a promise to the user and checks the record the client writes, never the wall clock: a redirect
is a failed request of its own kind, compressed or oversized answers are refused within their byte limits, the
`timeout` holds whatever the server does (the record's own elapsed time is checked), an empty answer is a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gzip
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from forklift.bench.metrics import scrape, server_version
from forklift.client.records import RequestRecord
from forklift.client.stream import Limits, PreparedRequest, StreamClient
from forklift.errors import UsageError
from tests.bench.test_faults import run
from tests.fixtures.sse import Plan

CHAT = PreparedRequest("q1", "chat", {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})
ANSWER = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@contextlib.asynccontextmanager
async def serve(handler: Handler) -> AsyncIterator[str]:
    """An aiohttp server on 127.0.0.1 answering every completion request with `handler`."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def raw_server(answer: Callable[[asyncio.StreamWriter], Awaitable[None]]) -> AsyncIterator[str]:
    """A raw TCP server on 127.0.0.1 that writes whatever `answer` writes, for misbehaviour below HTTP."""

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # cancelled when the test's loop ends: asyncio's stream server would log that as an unhandled error
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            await reader.readuntil(b"\r\n\r\n")
            await answer(writer)
        writer.transport.abort()

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


async def ask(url: str, request: PreparedRequest = CHAT, **kw: object) -> RequestRecord:
    async with StreamClient(url, **kw) as client:  # type: ignore[arg-type]
        return await client.send(request, zero=time.perf_counter())


def test_a_redirect_to_another_port_is_not_followed_but_a_failure_of_its_own():
    """A 307 to another server would measure that server under the first one's URL."""
    reached = []

    async def elsewhere(request: web.Request) -> web.StreamResponse:
        reached.append(request.path)
        return web.Response(body=ANSWER, content_type="text/event-stream")

    async def go() -> RequestRecord:
        async with serve(elsewhere) as other:

            async def redirect(request: web.Request) -> web.StreamResponse:
                raise web.HTTPTemporaryRedirect(other + request.path)

            async with serve(redirect) as url:
                return await ask(url)

    record = asyncio.run(go())
    assert record.error_kind == "redirect" and record.status == 307 and not record.ok
    assert "not followed" in record.error and "/v1/chat/completions" in record.error
    assert reached == []


@functools.cache
def gzip_bomb() -> bytes:
    """gzip of 64 MiB of one byte: a few KiB on the wire. Made before any server starts: compressing blocks the
    loop the client shares with the fake server."""
    return gzip.compress(b"a" * 64 * 2**20, compresslevel=9)


@pytest.fixture
def bomb() -> bytes:
    return gzip_bomb()


def test_a_compressed_stream_is_refused_unread_not_decoded(bomb):
    """The client asks for identity; a server that gzips anyway (a 64 MiB bomb) is a protocol failure, not read."""
    seen = {}

    async def gzipped(request: web.Request) -> web.StreamResponse:
        seen["accept"] = request.headers.get("Accept-Encoding")
        return web.Response(body=bomb, headers={"Content-Encoding": "gzip", "Content-Type": "text/event-stream"})

    async def go() -> RequestRecord:
        async with serve(gzipped) as url:
            return await ask(url, timeout=30)

    record = asyncio.run(go())
    assert seen["accept"] == "identity"
    assert record.error_kind == "protocol" and "Content-Encoding 'gzip'" in record.error


def test_a_compressed_error_body_is_not_decoded(bomb):
    """A 500 whose gzip body decodes to 64 MiB: the record says what came, without decoding it."""

    async def gzipped(request: web.Request) -> web.StreamResponse:
        return web.Response(status=500, body=bomb, headers={"Content-Encoding": "gzip"})

    async def go() -> RequestRecord:
        async with serve(gzipped) as url:
            return await ask(url, timeout=30)

    record = asyncio.run(go())
    assert record.error_kind == "http" and record.error == "HTTP 500: (a 'gzip'-encoded body, not read)"


def test_an_endless_error_body_is_read_to_its_limit_and_no_further():
    """A 500 whose body never ends: the client reads 64 KiB of it and gives up on the rest, well before timeout."""
    written = []

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=500)
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):
            while True:
                await response.write(b"x" * 65536)
                written.append(65536)
        return response

    async def go() -> RequestRecord:
        async with serve(endless) as url:
            return await ask(url, timeout=60)

    record = asyncio.run(go())
    assert record.error_kind == "http" and record.error == "HTTP 500: " + "x" * 300


def flood(event: bytes, times: int) -> Handler:
    async def answer(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):
            for _ in range(times):
                await response.write(event)
        return response

    return answer


ONE_TOKEN = b'data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}\n\n'


def test_an_answer_over_the_response_limit_is_too_large():
    """A well-formed stream that goes on past the byte limit (a request without max_tokens): a failed request,
    with what arrived kept."""
    unbounded = PreparedRequest("q1", "chat", {"model": "m", "messages": [{"role": "user", "content": "hi"}]})

    async def go() -> RequestRecord:
        async with serve(flood(ONE_TOKEN, 2**16)) as url:  # 5 MiB, five times the limit
            return await ask(url, unbounded, limits=Limits(response_bytes=2**20))

    record = asyncio.run(go())
    assert record.error_kind == "too_large" and "1048576-byte response limit" in record.error
    assert 0 < len(record.chunks) <= 2**20 // len(ONE_TOKEN)


def test_more_content_chunks_than_tokens_asked_for_is_too_large():
    """max_tokens 4, n 2: 8 tokens asked for, so past 4 x 8 + 16 = 48 content chunks the answer is refused
    (a server may split one token's text over a few chunks, never over dozens)."""
    request = PreparedRequest("q1", "chat", {**CHAT.body, "n": 2})

    async def go() -> RequestRecord:
        async with serve(flood(ONE_TOKEN, 1000)) as url:
            return await ask(url, request)

    record = asyncio.run(go())
    assert record.error_kind == "too_large" and len(record.chunks) == 48
    assert record.error == "more than 48 content chunks for the tokens asked for (max_tokens x n)"


def test_a_limit_from_the_environment_is_checked(monkeypatch):
    monkeypatch.setenv("FORKLIFT_RESPONSE_MAX_BYTES", "1024")
    assert Limits.from_env().response_bytes == 1024
    monkeypatch.setenv("FORKLIFT_SSE_EVENT_MAX_BYTES", "-5")
    with pytest.raises(UsageError, match=r"^FORKLIFT_SSE_EVENT_MAX_BYTES='-5': expected a positive number of bytes$"):
        Limits.from_env()


def test_an_event_over_the_event_limit_is_too_large():
    """16 MiB without a blank line: refused at the event limit, not buffered whole."""

    async def no_blank_line(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):
            await response.write(b"data: ")
            for _ in range(256):
                await response.write(b"a" * 65536)
        return response

    async def go() -> RequestRecord:
        async with serve(no_blank_line) as url:
            return await ask(url, limits=Limits(event_bytes=2**20))

    record = asyncio.run(go())
    assert record.error_kind == "too_large" and "1048576 bytes without a blank line: exceeds the limit" in record.error


async def stall_headers(writer: asyncio.StreamWriter) -> None:
    await asyncio.Event().wait()


async def trickle_headers(writer: asyncio.StreamWriter) -> None:
    for byte in b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" * 100:
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(0.05)


async def trickle_body(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    for byte in ANSWER * 100:
        writer.write(b"1\r\n%c\r\n" % byte)
        await writer.drain()
        await asyncio.sleep(0.05)


async def endless_keepalives(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    while True:
        writer.write(b"e\r\n: keep-alive\n\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.001)


async def gzip_bomb_stream(writer: asyncio.StreamWriter) -> None:
    body = gzip_bomb()
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    await writer.drain()
    await asyncio.Event().wait()


@pytest.mark.parametrize(
    ("answer", "kinds"),
    [
        (stall_headers, {"timeout"}),
        (trickle_headers, {"timeout"}),
        (trickle_body, {"timeout"}),
        (endless_keepalives, {"timeout"}),
        (gzip_bomb_stream, {"protocol"}),  # refused before the deadline: not decoded at all
    ],
)
def test_the_timeout_holds_whatever_the_server_sends(answer, kinds, bomb):
    """The record says how long the client waited: never more than the timeout and one second."""
    timeout = 2.0

    async def go() -> RequestRecord:
        async with raw_server(answer) as url:
            return await ask(url, timeout=timeout)

    record = asyncio.run(go())
    assert record.error_kind in kinds and not record.ok
    assert record.end is not None and record.end - record.send <= timeout + 1.0


def test_an_answer_without_choices_is_an_empty_answer():
    """A stream of usage and [DONE] and nothing else: no answer, so a failed request, not 0 tokens ok."""
    usage = {"usage": {"prompt_tokens": 3, "completion_tokens": 0, "total_tokens": 3}, "choices": []}
    body = b"data: " + json.dumps(usage).encode() + b"\n\ndata: {}\n\ndata: [DONE]\n\n"

    async def empty(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, content_type="text/event-stream")

    async def go() -> RequestRecord:
        async with serve(empty) as url:
            return await ask(url)

    record = asyncio.run(go())
    assert record.error_kind == "empty" and not record.ok and record.completion_tokens == 0


def test_a_bench_of_empty_answers_is_a_failed_receipt(tmp_path, sse_server):
    """Every answer empty (the fake SSE server scripts it): no request ok, so the receipt is failed, not ok."""
    sse_server.plan = lambda i, body: Plan(events=(b'{"object":"chat.completion.chunk","choices":[]}', b"[DONE]"))
    receipt, cell = run(tmp_path, sse_server.url, n=3)
    assert receipt.status == "failed"
    assert [r["error_kind"] for r in cell["requests"]] == ["empty"] * 3
    assert cell["aggregate"]["failures"] == {"empty": 3} and cell["aggregate"]["ok"] == 0


def test_metrics_and_version_are_read_within_limits_and_never_through_a_redirect():
    """/metrics that never ends and /version that redirects (a fake, as above): the bench reads neither."""

    async def endless_metrics(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):
            while True:
                await response.write(b"# HELP x y\n" * 8192)
        return response

    async def redirect(request: web.Request) -> web.StreamResponse:
        raise web.HTTPTemporaryRedirect("/elsewhere")

    async def elsewhere(request: web.Request) -> web.StreamResponse:
        return web.json_response({"version": "9.9.9"})

    async def go() -> tuple[object, object]:
        app = web.Application()
        app.router.add_get("/metrics", endless_metrics)
        app.router.add_get("/version", redirect)
        app.router.add_get("/elsewhere", elsewhere)
        runner = web.AppRunner(app, shutdown_timeout=0.1)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        try:
            async with StreamClient(url) as client:
                return await scrape(client.session, url), await server_version(client.session, url)
        finally:
            await runner.cleanup()

    assert asyncio.run(go()) == (None, None)
