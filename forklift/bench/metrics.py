"""Server counters from Prometheus /metrics: snapshots, deltas over a cell, and what they mean.

Speculative-decoding tok/step and prefix-cache hits are only readable as deltas of
server-wide counters, so every run is bracketed by two scrapes. A metric the server
does not expose stays absent (None): it is never read as zero.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from forklift.client.bodies import read_within
from forklift.client.sse import TooLarge
from forklift.engines import engine_adapter

if TYPE_CHECKING:
    from forklift.bench.schema import BenchBody

# family -> {frozenset(labels): value}; counters summed over their `_total` samples.
Snapshot = dict[str, dict[frozenset[tuple[str, str]], float]]

COUNTER_ROLES = (
    "spec_drafts",
    "spec_draft_tokens",
    "spec_accepted_tokens",
    "prefix_cache_queries",
    "prefix_cache_hits",
    "preemptions",
    "generation_tokens",
    "prompt_tokens",
)
PER_POSITION_ROLE = "spec_accepted_per_pos"
METRICS_BYTES = 16 * 2**20  # vLLM's /metrics is about 100 KiB
VERSION_BYTES = 64 * 2**10


def metric_names(engine: str) -> dict[str, str]:
    """Role -> Prometheus family name, from the engine adapter."""
    return dict(engine_adapter(engine).metrics)


def parse_snapshot(text: str) -> Snapshot:
    """Counters and gauges by family name; a histogram's buckets and sum under `<family>_bucket` (labels hold `le`), `_sum`."""
    snapshot: Snapshot = {}
    for family in text_string_to_metric_families(text):
        values = snapshot.setdefault(family.name, {})
        for sample in family.samples:
            if sample.name in (family.name, family.name + "_total"):
                values[frozenset(sample.labels.items())] = sample.value
            elif family.type == "histogram" and sample.name in (family.name + "_bucket", family.name + "_sum"):
                snapshot.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return snapshot


async def scrape(session: aiohttp.ClientSession, base_url: str) -> Snapshot | None:
    """The server's /metrics, parsed; None when it has none (any OpenAI server may be benched)."""
    try:
        url = base_url.rstrip("/") + "/metrics"
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=30), allow_redirects=False) as response:
            if response.status != 200:
                return None
            return parse_snapshot((await read_within(response, METRICS_BYTES)).decode(errors="replace"))
    except (
        aiohttp.ClientError,
        asyncio.TimeoutError,
        ValueError,
        TooLarge,
    ):  # not the builtin TimeoutError before 3.11
        return None


async def server_version(session: aiohttp.ClientSession, base_url: str) -> str | None:
    """The engine version the server states (vLLM: GET /version -> {"version": "0.32.0"}); None when it does not."""
    try:
        url = base_url.rstrip("/") + "/version"
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=30), allow_redirects=False) as response:
            stated = json.loads(await read_within(response, VERSION_BYTES)) if response.status == 200 else None
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError, TooLarge):
        return None
    version = stated.get("version") if isinstance(stated, dict) else None
    return str(version) if isinstance(version, (str, int, float)) else None


def counter_deltas(before: Snapshot, after: Snapshot, names: dict[str, str]) -> dict[str, Any]:
    """Raw counter movement between two snapshots, by role (only roles the server exposes)."""
    out: dict[str, Any] = {}
    for role in COUNTER_ROLES:
        family = names.get(role)
        if family in after:
            out[role] = sum(after[family].values()) - sum(before.get(family, {}).values())
    family = names.get(PER_POSITION_ROLE)
    if family in after:
        per_pos: dict[str, float] = defaultdict(float)
        for labels, value in after[family].items():
            per_pos[dict(labels).get("position", "?")] += value
        for labels, value in before.get(family, {}).items():
            per_pos[dict(labels).get("position", "?")] -= value
        out[PER_POSITION_ROLE] = dict(per_pos)
    return out


def add_deltas(total: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """Sum raw deltas of several runs (the kept ones)."""
    out = dict(total)
    for role, value in delta.items():
        if isinstance(value, dict):
            merged = dict(out.get(role, {}))
            for key, v in value.items():
                merged[key] = merged.get(key, 0.0) + v
            out[role] = merged
        else:
            out[role] = out.get(role, 0.0) + value
    return out


def derive(raw: dict[str, Any]) -> dict[str, Any]:
    """Raw deltas plus what they mean: tok/step = 1 + accepted/drafts, per-position acceptance, hit rate."""
    out = {role: (int(v) if isinstance(v, float) and v.is_integer() else v) for role, v in raw.items()}
    drafts = raw.get("spec_drafts")
    if drafts:
        out["tok_per_step"] = 1.0 + raw.get("spec_accepted_tokens", 0.0) / drafts
        if raw.get("spec_draft_tokens"):
            out["acceptance_rate"] = raw.get("spec_accepted_tokens", 0.0) / raw["spec_draft_tokens"]
        per_pos = raw.get(PER_POSITION_ROLE) or {}
        positions = sorted(per_pos, key=lambda p: int(p) if p.isdigit() else 1 << 30)
        out["acceptance_per_position"] = [per_pos[p] / drafts for p in positions]
    if raw.get("prefix_cache_queries"):
        out["prefix_cache_hit_rate"] = raw.get("prefix_cache_hits", 0.0) / raw["prefix_cache_queries"]
    return out


def server_info(snapshot: Snapshot | None, names: dict[str, str]) -> dict[str, Any]:
    """Facts the server states about itself (KV pool size, blocks) from its info metric's labels."""
    family = names.get("cache_config")
    if not snapshot or family not in snapshot:
        return {}
    labels = dict(next(iter(snapshot[family])))
    wanted = ("kv_cache_size_tokens", "num_gpu_blocks", "block_size", "enable_prefix_caching")
    return {key: labels[key] for key in wanted if key in labels}


def cache_reuse(body: BenchBody) -> list[str]:
    """Cells of a salted bench whose prompts hit the server's prefix cache: the server saw them before.

    The salt is a pure function of (nonce, cell, run, prompt) so both sides of a compare send the same
    text; a second bench of the same workload on one live server (an A/A control, a re-run) therefore
    reuses the first one's cache, and reads fast. Seen on the H200 campaign: 16 of 32 prompts cached.
    A multi-turn cell's later turns hit their own history on purpose: there only its first turns count.
    """
    if not body.workload.salted:
        return []
    out = []
    for cell in body.cells:
        hits = (cell.metrics_delta or {}).get("prefix_cache_hits") or 0
        turns = cell.aggregate.get("turns")
        if turns:  # conversations reuse their own history by design: only a first turn must start cold
            hits = (turns.get("1") or {}).get("prefix_hits") or 0
        if hits > 0:
            out.append(
                f"cell {cell.name}: {hits:,.0f} prompt tokens hit the prefix cache of a salted workload: this server "
                f"saw these prompts before (same --salt-nonce, cell, run), so TTFT and throughput read fast; "
                f"bench again with another --salt-nonce"
            )
    return out
