"""Synthetic prompts of an exact input length, counted by the server's own tokenizer.

A prompt's length is what the engine counts (chat template included), so lengths are
fitted against the server's /tokenize endpoint rather than guessed from words: cut k
filler tokens, count the request as the endpoint will see it, move k by the miss, repeat.
"""

from __future__ import annotations

import json
import random
from typing import Any

import aiohttp

from forklift.client.bodies import read_start, read_within
from forklift.client.records import Endpoint
from forklift.client.sse import TooLarge
from forklift.errors import ForkliftError, UsageError
from forklift.workload.items import PRESETS, WorkItem, Workload
from forklift.workload.lengths import Span, span_text

# Plain words most tokenizers keep whole: filler text that tokenizes predictably.
FILLER_WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "river",
    "stone",
    "light",
    "house",
    "green",
    "blue",
    "water",
    "paper",
    "table",
    "window",
    "garden",
    "winter",
    "summer",
    "market",
    "letter",
    "number",
    "system",
    "little",
    "people",
    "morning",
    "evening",
    "country",
    "mountain",
    "story",
    "simple",
    "answer",
    "question",
    "music",
    "school",
]
FIT_ATTEMPTS = 8


def synthetic_workload(
    *,
    input_tokens: int | Span,
    output_tokens: int | Span,
    count: int,
    endpoint: Endpoint = "completions",
    preset: str = "default",
    seed: int = 0,
    salted: bool = True,
    ignore_eos: bool = True,
    salt_nonce: str = "forklift",
) -> Workload:
    """`count` distinct prompts of exactly their input length (fitted at prepare time) and output length;
    a length given as a range is drawn uniformly for each prompt from its seed, so the draw is the workload's."""
    inputs = (input_tokens, input_tokens) if isinstance(input_tokens, int) else input_tokens
    outputs = (output_tokens, output_tokens) if isinstance(output_tokens, int) else output_tokens
    if inputs[0] < 1 or outputs[0] < 1 or count < 1 or inputs[0] > inputs[1] or outputs[0] > outputs[1]:
        raise UsageError(
            f"synthetic workload: input tokens ({span_text(inputs)}), output tokens ({span_text(outputs)}) "
            f"and count ({count}) must all be positive"
        )
    if preset not in PRESETS:
        raise UsageError(f"sampling preset {preset!r}: expected one of {', '.join(PRESETS)}")

    def item(i: int) -> WorkItem:
        draw = random.Random(f"lengths|{seed}|{i}")  # fixed lengths draw nothing: their workloads are as before
        return WorkItem(
            id=f"syn-{i:04d}",
            max_tokens=draw.randint(*outputs) if outputs[0] != outputs[1] else outputs[0],
            ignore_eos=ignore_eos,
            synthetic_tokens=draw.randint(*inputs) if inputs[0] != inputs[1] else inputs[0],
            synthetic_seed=seed * 1_000_003 + i,
        )

    return Workload(
        name=f"synthetic-{span_text(inputs)}in-{span_text(outputs)}out",
        endpoint=endpoint,
        items=tuple(item(i) for i in range(count)),
        preset=preset,
        seed=seed,
        salted=salted,
        salt_nonce=salt_nonce,
    )


def filler_text(seed: int, words: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(FILLER_WORDS) for _ in range(words))


def as_request(endpoint: Endpoint, text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]} if endpoint == "chat" else {"prompt": text}


TOKENIZER_BYTES = 16 * 2**20  # a /tokenize answer of a 100k-token prompt is under 1 MiB


class ServerTokenizer:
    """The server's /tokenize and /detokenize (vLLM's): the engine's own count, template included."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str, model: str):
        self.session = session
        self.base_url = base_url.rstrip("/")
        self.model = model

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            request = {"model": self.model, **body}
            async with self.session.post(self.base_url + path, json=request, allow_redirects=False) as response:
                if response.status != 200:
                    text = " ".join((await read_start(response, 200)).decode(errors="replace").split())
                    raise ForkliftError(
                        f"{self.base_url}{path} answered HTTP {response.status} ({text}); synthetic prompts "
                        "need the server's tokenizer endpoint (vLLM's /tokenize)"
                    )
                answer = json.loads(await read_within(response, TOKENIZER_BYTES))
        except (aiohttp.ClientError, ValueError, TooLarge) as exc:
            raise ForkliftError(f"{self.base_url}{path}: {exc}") from None
        if not isinstance(answer, dict):
            raise ForkliftError(f"{self.base_url}{path}: answered {type(answer).__name__}, not a JSON object")
        return answer

    async def encode(self, text: str) -> list[int]:
        return [
            int(t) for t in (await self._post("/tokenize", {"prompt": text, "add_special_tokens": False}))["tokens"]
        ]

    async def decode(self, ids: list[int]) -> str:
        return str((await self._post("/detokenize", {"tokens": ids}))["prompt"])

    async def count(self, endpoint: Endpoint, text: str) -> int:
        return int((await self._post("/tokenize", as_request(endpoint, text)))["count"])


async def fit_prompt(
    tokenizer: ServerTokenizer, endpoint: Endpoint, item: WorkItem, prefix: str, pool: list[int]
) -> str:
    """The text `prefix + filler` whose request counts exactly `item.synthetic_tokens` tokens."""
    target = item.synthetic_tokens or 0
    k = target - await tokenizer.count(endpoint, prefix)
    counted = None
    for _ in range(FIT_ATTEMPTS):
        if k < 0:
            break
        if k > len(pool):
            raise ForkliftError(f"synthetic prompt {item.id}: filler ran out fitting {target} tokens")
        text = prefix + await tokenizer.decode(pool[:k])
        counted = await tokenizer.count(endpoint, text)
        if counted == target:
            return text
        k += target - counted
    raise ForkliftError(
        f"synthetic prompt {item.id}: cannot fit exactly {target} input tokens with the server's tokenizer "
        f"(template and salt alone take {target - k if counted is None else counted})"
    )


async def filler_pool(tokenizer: ServerTokenizer, item: WorkItem) -> list[int]:
    """Token ids of the item's filler text: twice the target, so fitting never runs short."""
    target = item.synthetic_tokens or 0
    return await tokenizer.encode(filler_text(item.synthetic_seed or 0, 2 * target + 16))
