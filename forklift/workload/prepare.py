"""Turn workload items into ready-to-send requests for one run: salt, sampling, lengths.

The salt is a unique prefix per (cell, run, prompt): it keeps every request off the
prefix cache (warm-up and earlier cells included, so no run reuses another's prefix). It is derived, not random,
so pin A and pin B see identical prompts and their outputs stay comparable; change
`salt_nonce` to bench the same live server again without hitting its cache.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable
from typing import Any, TypeVar

import aiohttp

from forklift.client.stream import PreparedRequest
from forklift.workload.items import WorkItem, Workload
from forklift.workload.synthetic import ServerTokenizer, as_request, filler_pool, fit_prompt

T = TypeVar("T")


def salt_for(workload: Workload, cell: str, run: int, prompt_id: str) -> str:
    digest = hashlib.sha256(f"{workload.salt_nonce}|{cell}|{run}|{prompt_id}".encode()).hexdigest()
    return f"[{digest[:12]}] "


def salted_messages(messages: list[dict[str, Any]], salt: str) -> list[dict[str, Any]]:
    """Salt the very first message: the prefix cache matches from the first token on."""
    first = dict(messages[0])
    content = first.get("content")
    if isinstance(content, str):
        first["content"] = salt + content
    else:  # multi-part content: a leading text part
        first["content"] = [{"type": "text", "text": salt}, *(content or [])]
    return [first, *messages[1:]]


def prompt_ids(workload: Workload, count: int | None) -> list[tuple[str, int, WorkItem]]:
    """(prompt id, item index, item) for `count` requests: the cohort, cycled when more are asked."""
    n = len(workload.items) if count is None else count
    out = []
    for k in range(n):
        index = k % len(workload.items)
        item = workload.items[index]
        lap = k // len(workload.items)
        out.append((item.id if lap == 0 else f"{item.id}#{lap}", index, item))
    return out


FIT_CONCURRENCY = 16  # /tokenize round trips in flight while a run's synthetic prompts are fitted


async def prepare(
    workload: Workload,
    *,
    model: str,
    cell: str,
    run: int,
    count: int | None = None,
    session: aiohttp.ClientSession | None = None,
    base_url: str | None = None,
) -> list[PreparedRequest]:
    """The run's requests; synthetic items are fitted with the server's tokenizer (needs session+base_url).

    Fitting takes a few /tokenize round trips a prompt: they run FIT_CONCURRENCY at a time (on an H200,
    one by one they idled the server ~1 s between two runs of 64 prompts)."""
    tokenizer = ServerTokenizer(session, base_url, model) if session is not None and base_url else None
    ids = prompt_ids(workload, count)
    texts: dict[str, str] = {}
    synthetic = [(prompt_id, index, item) for prompt_id, index, item in ids if item.synthetic_tokens is not None]
    if synthetic:
        if tokenizer is None:
            raise ValueError("synthetic workloads are prepared against a server (session and base_url)")
        texts = await _fitted(workload, tokenizer, cell, run, synthetic)
    requests = []
    for prompt_id, index, item in ids:
        salt = salt_for(workload, cell, run, prompt_id) if workload.salted else ""
        if item.synthetic_tokens is not None:
            body = as_request(workload.endpoint, texts[prompt_id])
        elif item.messages is not None:
            body = {"messages": salted_messages(item.messages, salt) if salt else item.messages}
        else:
            body = {"prompt": salt + (item.prompt or "")}
        body["model"] = model
        if item.max_tokens is not None:
            body["max_tokens"] = item.max_tokens
        if item.ignore_eos:
            body["ignore_eos"] = True
        body.update(workload.sampling(index, item))
        requests.append(PreparedRequest(prompt_id=prompt_id, endpoint=workload.endpoint, body=body))
    return requests


async def _fitted(
    workload: Workload, tokenizer: ServerTokenizer, cell: str, run: int, items: list[tuple[str, int, WorkItem]]
) -> dict[str, str]:
    """Each synthetic prompt's fitted text by prompt id: each item's filler once, then every fit."""
    slots = asyncio.Semaphore(FIT_CONCURRENCY)

    async def bounded(work: Awaitable[T]) -> T:
        async with slots:
            return await work

    first = {index: item for _, index, item in items}
    filler = await asyncio.gather(*(bounded(filler_pool(tokenizer, item)) for item in first.values()))
    pools = dict(zip(first, filler, strict=True))

    async def fit(prompt_id: str, index: int, item: WorkItem) -> tuple[str, str]:
        salt = salt_for(workload, cell, run, prompt_id) if workload.salted else ""
        return prompt_id, await bounded(fit_prompt(tokenizer, workload.endpoint, item, salt, pools[index]))

    return dict(await asyncio.gather(*(fit(*entry) for entry in items)))
