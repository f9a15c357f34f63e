"""The streaming client against the fake SSE server (a fake: it lets us dictate chunking).

Real-server behaviour is tested in tests/bench/test_engine.py; here the server's
chunking is scripted so every record field can be checked exactly.
"""

import asyncio
import hashlib
import time

from forklift.client.stream import PreparedRequest, StreamClient
from tests.fixtures.sse import Plan


def send(url, request, **kw):
    async def go():
        async with StreamClient(url, **kw) as client:
            return await client.send(request, zero=time.perf_counter())

    return asyncio.run(go())


CHAT = PreparedRequest("q1", "chat", {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 6})


def test_role_chunk_and_keepalives_do_not_count(sse_server):
    sse_server.plan = lambda i, body: Plan(delay=0.01, keepalive=True, role_chunk=True)
    r = send(sse_server.url, CHAT)
    assert r.ok and r.status == 200 and r.finish_reason == "length"
    assert [n for _, n in r.chunks] == [1] * 6
    assert r.completion_tokens == 6 and r.tokens_from == "usage" and r.prompt_tokens == 8
    assert r.chunk_tokens_from == "usage"
    # TTFT is the first content chunk, one planned delay after the (instant) role chunk
    assert r.ttft >= 0.01
    assert r.output_sha256 == hashlib.sha256((" tok" * 6).encode()).hexdigest()


def test_multi_token_chunks_counted_from_running_usage(sse_server):
    sse_server.plan = lambda i, body: Plan(chunks=3, tokens_per_chunk=4, delay=0.02)
    r = send(sse_server.url, CHAT)
    assert [n for _, n in r.chunks] == [4, 4, 4]
    assert r.completion_tokens == 12
    assert len(r.itls) == 8  # 2 gaps x 4 tokens: the gap is shared, not charged to one token
    assert all(0.003 < gap < 0.02 for gap in r.itls)


def test_completions_endpoint(sse_server):
    request = PreparedRequest("c1", "completions", {"model": "m", "prompt": "x", "max_tokens": 4})
    r = send(sse_server.url, request)
    assert r.ok and r.completion_tokens == 4 and len(r.chunks) == 4


def test_server_without_usage_gets_client_counts(sse_server):
    sse_server.plan = lambda i, body: Plan(usage=False)
    r = send(sse_server.url, PreparedRequest("c1", "completions", {"model": "m", "prompt": "x", "max_tokens": 5}))
    assert r.ok and r.completion_tokens == 5 and r.tokens_from == "client"
    assert r.chunk_tokens_from == "one_per_chunk" and r.prompt_tokens is None


def test_a_url_without_a_scheme_is_a_recorded_protocol_failure_not_a_traceback():
    r = send("127.0.0.1:9", CHAT)
    assert r.error_kind == "protocol" and r.error.startswith("NonHttpUrlClientError: 127.0.0.1:9/v1/chat/completions")
