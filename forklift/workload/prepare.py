"""Turn workload items into ready-to-send requests for one run: salt, sampling, lengths.

The salt is a unique prefix per (cell, run, prompt): it keeps every request off the
prefix cache (warm-up and earlier cells included, so no run reuses another's prefix). It is derived, not random,
so pin A and pin B see identical prompts and their outputs stay comparable; change
`salt_nonce` to bench the same live server again without hitting its cache.
"""

from __future__ import annotations

import hashlib
from typing import Any

import aiohttp

from forklift.client.stream import PreparedRequest
from forklift.workload.items import WorkItem, Workload
from forklift.workload.synthetic import ServerTokenizer, as_request, filler_pool, fit_prompt


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
    """The run's requests; synthetic items are fitted with the server's tokenizer (needs session+base_url)."""
    tokenizer = ServerTokenizer(session, base_url, model) if session is not None and base_url else None
    pools: dict[int, list[int]] = {}
    requests = []
    for prompt_id, index, item in prompt_ids(workload, count):
        salt = salt_for(workload, cell, run, prompt_id) if workload.salted else ""
        if item.synthetic_tokens is not None:
            if tokenizer is None:
                raise ValueError("synthetic workloads are prepared against a server (session and base_url)")
            if index not in pools:
                pools[index] = await filler_pool(tokenizer, item)
            body = as_request(
                workload.endpoint, await fit_prompt(tokenizer, workload.endpoint, item, salt, pools[index])
            )
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
