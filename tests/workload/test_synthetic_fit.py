"""Fitting synthetic prompts: every prompt exact, their /tokenize round trips in flight together.

The server is a fake (words as tokens): what is asserted is how many requests it holds at once, which a
real engine does not report. tests/bench/test_engine.py fits against a real vLLM's tokenizer.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from aiohttp import web

from forklift.workload import prepare, synthetic_workload
from forklift.workload.prepare import FIT_CONCURRENCY


class WordServer:
    """/tokenize and /detokenize over whitespace words; counts the requests it holds at once."""

    def __init__(self) -> None:
        self.vocabulary: list[str] = []
        self.inside = 0
        self.most = 0
        self.calls = 0
        self.many = asyncio.Event()  # set once two requests are inside together

    def ids(self, text: str) -> list[int]:
        out = []
        for word in text.split():
            if word not in self.vocabulary:
                self.vocabulary.append(word)
            out.append(self.vocabulary.index(word))
        return out

    async def handle(self, request: web.Request) -> web.Response:
        body: dict[str, Any] = await request.json()
        self.calls += 1
        self.inside += 1
        self.most = max(self.most, self.inside)
        if self.inside > 1:
            self.many.set()
        try:
            # hold each request until a second one is in flight: concurrency shows. One by one, the first
            # waits out the bound and then none is held, so the test fails at once instead of hanging.
            await asyncio.wait_for(self.many.wait(), 5.0)
        except asyncio.TimeoutError:
            self.many.set()
        finally:
            self.inside -= 1
        if request.path == "/detokenize":
            answer: dict[str, Any] = {"prompt": " ".join(self.vocabulary[t] for t in body["tokens"])}
        else:
            tokens = self.ids(body["prompt"])
            answer = {"tokens": tokens, "count": len(tokens)}
        return web.Response(text=json.dumps(answer), content_type="application/json")


async def fitted(count: int) -> tuple[list[str], WordServer]:
    server = WordServer()
    app = web.Application()
    app.router.add_post("/tokenize", server.handle)
    app.router.add_post("/detokenize", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        workload = synthetic_workload(input_tokens=24, output_tokens=4, count=count)
        async with aiohttp.ClientSession() as session:
            requests = await prepare(
                workload, model="m", cell="c", run=0, session=session, base_url=f"http://127.0.0.1:{port}"
            )
    finally:
        await runner.cleanup()
    return [r.body["prompt"] for r in requests], server


def test_prompts_are_fitted_exactly_in_order_with_round_trips_in_flight_together():
    prompts, server = asyncio.run(fitted(40))
    assert len(prompts) == 40
    assert all(len(p.split()) == 24 for p in prompts)  # the salt's words count: each prompt is 24 tokens
    assert len(set(prompts)) == 40  # each its own salt, in the workload's order
    assert [p.split()[0] for p in prompts] == [p.split()[0] for p in asyncio.run(fitted(40))[0]]
    assert 1 < server.most <= FIT_CONCURRENCY
