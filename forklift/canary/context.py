"""`canary needle` and `canary cold-pair`: long prompts, read cold, answered exactly.

needle: a passphrase sentence at each chosen depth of N tokens of filler, asked for through the
model's chat template with the answer's lead already written (`The passphrase is "`, continued
by the server: `continue_final_message`) and cut at the closing quote, so what the model writes
is the passphrase it retrieved and nothing else. It must be the needle exactly, and the server's
prefix-cache hit counter must not move for the request: each carries a fresh `cache_salt` (the
engine's per-request prefix-cache salt), not salt text, which a real model once returned as the
passphrase from the prompt's start (depth 0.1). A server that ignores the salt serves the shared
filler from its cache, and the check fails saying so. A real instruct model returns a passphrase-shaped needle this way; asked bare
for "the code", it chatted on past max_tokens. With `force_choice` the answer is forced by a
grammar (`structured_outputs` choice): a positive control for the pipeline, not for the model. cold-pair: the same salted long prompt twice, both timed; the first must hit
nothing in the prefix cache, the second must hit it.

Coldness is read from the server's counters; a server without them fails the check
(it cannot be shown), never passes it by default.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from forklift.errors import ForkliftError, UsageError
from forklift.quality.endpoint import Endpoint, counter, post, tokenize
from forklift.quality.options import at_least
from forklift.quality.schema import Attempt, SuiteBody

FILLER = (
    "The river bends twice before it reaches the old mill, where the water slows and turns green. "
    "Farmers along the bank grow barley in the dry years and rice when the rains come early. "
    "Every spring the town counts its boats, paints their names again and writes them in a ledger. "
)
QUESTION = "What is the passphrase? Reply with the passphrase only."
LEAD = 'The passphrase is "'  # the answer's start, written for the model; its closing quote ends the answer


@dataclass(frozen=True)
class NeedleOptions:
    tokens: int = 1500  # filler context length, in the server's tokens
    depths: tuple[float, ...] = (0.5,)  # where the needle sits, one request each: 0 = start, 1 = end
    needle: str = "blue-harbor-7391"
    force_choice: bool = False
    max_tokens: int = 24

    def __post_init__(self) -> None:
        at_least("needle", {"--context-tokens": (self.tokens, 1), "--max-tokens": (self.max_tokens, 1)})
        if not self.depths:
            raise UsageError("needle --depth: give at least one depth")
        for depth in self.depths:
            if not 0.0 <= depth <= 1.0:
                raise UsageError(f"needle --depth {depth}: expected a fraction from 0 to 1")
        if not self.needle.strip() or '"' in self.needle or "\n" in self.needle:
            raise UsageError(
                f"needle --needle {self.needle!r}: expected one line without '\"' (the quote ends the answer)"
            )


@dataclass(frozen=True)
class ColdPairOptions:
    tokens: int = 1500

    def __post_init__(self) -> None:
        at_least("cold-pair", {"--context-tokens": (self.tokens, 1)})


def filler(endpoint: Endpoint, tokens: int) -> str:
    """About `tokens` tokens of filler: whole repetitions of FILLER as the server tokenizes it."""
    try:
        per_unit = len(tokenize(endpoint, FILLER, special=False))
    except ForkliftError:  # a server without /tokenize: about four characters a token
        per_unit = len(FILLER) // 4
    return FILLER * max(1, tokens // per_unit)


def needle_prompt(context: str, needle: str, depth: float) -> str:
    """The context with the needle sentence at the last sentence end before `depth`, then the question."""
    sentence_end = context.rfind(". ", 0, int(len(context) * depth))
    cut = sentence_end + 2 if sentence_end >= 0 else 0  # before the first sentence end: the very start
    return f"{context[:cut]}The passphrase is {needle}. {context[cut:]}\n{QUESTION}"


def _cold_request(endpoint: Endpoint, path: str, request: dict[str, Any]) -> tuple[Any, float | None]:
    """The answer and how many prefix-cache hits (tokens) the server counted while serving it."""
    before = counter(endpoint, "prefix_cache_hits")
    answer = post(endpoint, path, request)
    after = counter(endpoint, "prefix_cache_hits")
    return answer, (after - before if before is not None and after is not None else None)


def _needle_attempt(endpoint: Endpoint, options: NeedleOptions, context: str, depth: float) -> Attempt:
    salt = secrets.token_hex(8)
    request: dict[str, Any] = {
        "messages": [
            {"role": "user", "content": needle_prompt(context, options.needle, depth)},
            {"role": "assistant", "content": LEAD},
        ],
        "cache_salt": salt,
        "continue_final_message": True,
        "add_generation_prompt": False,
        "stop": ['"'],
        "max_tokens": options.max_tokens,
        "temperature": 0.0,
    }
    if options.force_choice:
        request["structured_outputs"] = {"choice": [options.needle]}
    answer, hits = _cold_request(endpoint, "/v1/chat/completions", request)
    attempt = Attempt(id=f"depth {depth:g}", status=answer.status, seconds=answer.seconds)
    attempt.detail = {"depth": depth, "salt": salt}
    if not answer.ok:
        attempt.error = answer.error()
        return attempt
    choice = (answer.body.get("choices") or [{}])[0]
    got = (choice.get("message") or {}).get("content") or ""
    attempt.finish_reason = choice.get("finish_reason")
    attempt.detail |= {
        "answer": got,
        "prompt_tokens": (answer.body.get("usage") or {}).get("prompt_tokens"),
        "prefix_cache_hits": hits,
    }
    if got != options.needle:
        attempt.error = f"answered {got[:80]!r}, expected {options.needle!r}"
    elif hits is None:
        attempt.error = "the server exposes no prefix-cache counter: the request is not shown cold"
    elif hits:
        attempt.error = f"{hits:.0f} prefix-cache hit tokens on the cold request (does the server honour cache_salt?)"
    attempt.ok = attempt.error is None
    return attempt


def run_needle(endpoint: Endpoint, options: NeedleOptions) -> SuiteBody:
    """One cold request per depth over the same filler; passes only when every depth returned the needle exactly."""
    context = filler(endpoint, options.tokens)
    body = SuiteBody(suite="needle", url=endpoint.url, model=endpoint.model, options=dict(options.__dict__))
    attempts = [_needle_attempt(endpoint, options, context, depth) for depth in options.depths]
    body.items = [a.model_dump() for a in attempts]
    body.summary = {
        "exact": sum(a.ok for a in attempts),
        "depths": len(attempts),
        "prompt_tokens": max((a.detail.get("prompt_tokens") or 0 for a in attempts), default=0),
        "prefix_cache_hits": sum(a.detail.get("prefix_cache_hits") or 0 for a in attempts),
        "seconds": sum(a.seconds or 0.0 for a in attempts),
    }
    bad = next((a for a in attempts if not a.ok), None)
    body.failure = f"{bad.id}: {bad.error}" if bad else None
    body.passed = bad is None
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
