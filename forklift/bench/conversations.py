"""Send a multi-turn workload: each conversation's turns in order, every answer fed back into the next turn.

alternating: one request in flight, every conversation's turn 1, then every turn 2, ... (the server keeps
N histories and may evict one between its turns); each request's prefix-cache hits are the server
counters' delta over it, exact because nothing else ran. concurrent: the conversations at once, each in
order; one request's hits cannot be told from another's there, so they stay unknown (the cell's counter
deltas give the whole). A turn that fails ends its conversation: its next turn would have no history.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from forklift.bench.metrics import counter_deltas, scrape
from forklift.bench.recorder import BenchRecorder
from forklift.bench.schema import Cell
from forklift.client.records import UNREACHABLE, RequestRecord
from forklift.client.stream import PreparedRequest, StreamClient
from forklift.workload import WorkItem, Workload
from forklift.workload.prepare import salt_for


class Conversation:
    """One conversation's history and state while its turns are sent."""

    def __init__(self) -> None:
        self.history: list[dict[str, Any]] = []
        self.ended = False


async def send_conversations(
    client: StreamClient,
    workload: Workload,
    *,
    model: str,
    cell_name: str,
    run: int,
    zero: float,
    recorder: BenchRecorder,
    cell: Cell,
    advance: Callable[[RequestRecord], None],
    names: dict[str, str],
) -> bool:
    """One run of the conversations; True when the server became unreachable."""
    conversations: dict[int, Conversation] = {}
    measure = workload.interleave == "alternating"

    async def turn(index: int, item: WorkItem) -> bool:
        state = conversations.setdefault(item.conversation or 0, Conversation())
        if state.ended:
            return False
        salt = "" if state.history else salt_for(workload, cell_name, run, f"conv{item.conversation or 0:03d}")
        content = str((item.messages or [{}])[0].get("content", ""))
        messages = [*state.history, {"role": "user", "content": salt + content}]
        body = {"model": model, "messages": messages, "max_tokens": item.max_tokens, "ignore_eos": item.ignore_eos}
        body.update(workload.sampling(index, item))
        record = RequestRecord(prompt_id=item.id, run=run, send=time.perf_counter() - zero, turn=item.turn)
        text: list[str] = []
        try:
            before = await scrape(client.session, client.base_url) if measure else None
            await client.fill(record, PreparedRequest(item.id, "chat", body), zero, text)
            after = await scrape(client.session, client.base_url) if before is not None and record.ok else None
            hits = counter_deltas(before, after, names).get("prefix_cache_hits") if before and after else None
            record.prefix_hits = int(hits) if hits is not None else None
        finally:  # on cancellation too: an interrupted request is still recorded
            recorder.add(cell, record)
            advance(record)
        if not record.ok:
            state.ended = True
        else:
            state.history = [*messages, {"role": "assistant", "content": "".join(text)}]
        return record.error_kind in UNREACHABLE

    items = list(enumerate(workload.items))
    if measure:
        for index, item in items:
            if await turn(index, item):
                return True
        return False

    async def one_conversation(conversation: int) -> bool:
        for index, item in items:
            if item.conversation == conversation and await turn(index, item):
                return True
        return False

    found = sorted({item.conversation or 0 for _, item in items})
    return any(await asyncio.gather(*(one_conversation(c) for c in found)))
