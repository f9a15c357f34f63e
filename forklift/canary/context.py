"""`canary needle` and `canary cold-pair`: long prompts, read cold, answered exactly.

needle: a needle sentence at a chosen depth of N tokens of filler; the answer must be the
needle exactly, and the server's prefix-cache hit counter must not move for the request
(a salt at the very start makes it cold). With `force_choice` the answer is forced by a
grammar (`structured_outputs` choice): a positive control for the pipeline, not for the
model. cold-pair: the same salted long prompt twice, both timed; the first must hit
nothing in the prefix cache, the second must hit it.

Coldness is read from the server's counters; a server without them fails the check
(it cannot be shown), never passes it by default.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from forklift.errors import ForkliftError
from forklift.quality.endpoint import Endpoint, counter, post, tokenize
from forklift.quality.schema import Attempt, SuiteBody

FILLER = (
    "The river bends twice before it reaches the old mill, where the water slows and turns green. "
    "Farmers along the bank grow barley in the dry years and rice when the rains come early. "
    "Every spring the town counts its boats, paints their names again and writes them in a ledger. "
)
QUESTION = "What is the secret code? Reply with the code only."


@dataclass(frozen=True)
class NeedleOptions:
    tokens: int = 1500  # filler context length, in the server's tokens
    depth: float = 0.5  # where the needle sits: 0 = start, 1 = end
    needle: str = "forklift-needle-7391"
    force_choice: bool = False
    max_tokens: int = 24


@dataclass(frozen=True)
class ColdPairOptions:
    tokens: int = 1500


def filler(endpoint: Endpoint, tokens: int) -> str:
    """About `tokens` tokens of filler: whole repetitions of FILLER as the server tokenizes it."""
    try:
        per_unit = len(tokenize(endpoint, FILLER, special=False))
    except ForkliftError:  # a server without /tokenize: about four characters a token
        per_unit = len(FILLER) // 4
    return FILLER * max(1, tokens // per_unit)


def needle_prompt(context: str, options: NeedleOptions, salt: str) -> str:
    cut = context.rfind(". ", 0, int(len(context) * options.depth)) + 2 if options.depth > 0 else 0
    cut = max(cut, 0)
    return f"[{salt}] {context[:cut]}The secret code is {options.needle}. {context[cut:]}\n{QUESTION}"


def _cold_request(endpoint: Endpoint, path: str, request: dict[str, Any]) -> tuple[Any, float | None]:
    """The answer and how many prefix-cache hits (tokens) the server counted while serving it."""
    before = counter(endpoint, "prefix_cache_hits")
    answer = post(endpoint, path, request)
    after = counter(endpoint, "prefix_cache_hits")
    return answer, (after - before if before is not None and after is not None else None)


def run_needle(endpoint: Endpoint, options: NeedleOptions) -> SuiteBody:
    salt = secrets.token_hex(8)
    prompt = needle_prompt(filler(endpoint, options.tokens), options, salt)
    request: dict[str, Any] = {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": options.max_tokens,
        "temperature": 0.0,
    }
    if options.force_choice:
        request["structured_outputs"] = {"choice": [options.needle]}
    record = {**options.__dict__, "salt": salt, "prompt_chars": len(prompt)}
    body = SuiteBody(suite="needle", url=endpoint.url, model=endpoint.model, options=record)
    answer, hits = _cold_request(endpoint, "/v1/chat/completions", request)
    attempt = Attempt(id="0", status=answer.status, seconds=answer.seconds)
    if answer.ok:
        choice = (answer.body.get("choices") or [{}])[0]
        got = (choice.get("message") or {}).get("content") or ""
        attempt.finish_reason = choice.get("finish_reason")
        attempt.detail = {
            "answer": got,
            "prompt_tokens": (answer.body.get("usage") or {}).get("prompt_tokens"),
            "prefix_cache_hits": hits,
        }
        if got.strip() != options.needle:
            attempt.error = f"answered {got.strip()[:80]!r}, expected {options.needle!r}"
        elif hits is None:
            attempt.error = "the server exposes no prefix-cache counter: the request is not shown cold"
        elif hits:
            attempt.error = f"{hits:.0f} prefix-cache hit tokens on the cold request"
        attempt.ok = attempt.error is None
    else:
        attempt.error = answer.error()
    body.items = [attempt.model_dump()]
    body.summary = {**attempt.detail, "seconds": answer.seconds}
    body.failure = attempt.error
    body.passed = attempt.ok
    return body


def run_cold_pair(endpoint: Endpoint, options: ColdPairOptions) -> SuiteBody:
    salt = secrets.token_hex(8)
    prompt = f"[{salt}] {filler(endpoint, options.tokens)}"
    request = {"prompt": prompt, "max_tokens": 1, "temperature": 0.0}
    body = SuiteBody(
        suite="cold-pair", url=endpoint.url, model=endpoint.model, options={"tokens": options.tokens, "salt": salt}
    )
    attempts = []
    for name in ("cold", "cached"):
        answer, hits = _cold_request(endpoint, "/v1/completions", request)
        attempt = Attempt(id=name, status=answer.status, seconds=answer.seconds)
        if answer.ok:
            attempt.detail = {
                "prefix_cache_hits": hits,
                "prompt_tokens": (answer.body.get("usage") or {}).get("prompt_tokens"),
            }
            if hits is None:
                attempt.error = "the server exposes no prefix-cache counter"
            elif name == "cold" and hits:
                attempt.error = f"{hits:.0f} prefix-cache hit tokens on the cold request"
            elif name == "cached" and not hits:
                attempt.error = "no prefix-cache hits on the repeated prompt"
            attempt.ok = attempt.error is None
        else:
            attempt.error = answer.error()
        attempts.append(attempt)
    cold, cached = attempts
    body.items = [a.model_dump() for a in attempts]
    body.summary = {
        "cold_s": cold.seconds,
        "cached_s": cached.seconds,
        "speedup": cold.seconds / cached.seconds if cold.seconds and cached.seconds else None,
        "prompt_tokens": cold.detail.get("prompt_tokens"),
        "cached_hit_tokens": cached.detail.get("prefix_cache_hits"),
    }
    bad = next((a for a in attempts if not a.ok), None)
    body.failure = f"{bad.id} request: {bad.error}" if bad else None
    body.passed = bad is None
    return body
