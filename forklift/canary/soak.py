"""`canary soak`: N serial decode requests of exactly M tokens each; every one must come back whole.

`ignore_eos` (vLLM's sampling extension) makes each answer exactly `max_tokens` long, so the
total is known in advance: 120 requests x 64 tokens must read 120/120 and 7,680 tokens.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from forklift.quality.endpoint import Endpoint, post
from forklift.quality.schema import Attempt, SuiteBody


@dataclass(frozen=True)
class SoakOptions:
    requests: int = 120
    max_tokens: int = 64


def run_soak(endpoint: Endpoint, options: SoakOptions) -> SuiteBody:
    body = SuiteBody(suite="soak", url=endpoint.url, model=endpoint.model, options=dict(options.__dict__))
    attempts = []
    for index in range(options.requests):
        answer = post(
            endpoint,
            "/v1/completions",
            {
                "prompt": f"Soak request {index}: the engine keeps decoding.",
                "max_tokens": options.max_tokens,
                "ignore_eos": True,
                "temperature": 0.0,
            },
        )
        attempt = Attempt(id=str(index), status=answer.status, seconds=answer.seconds)
        if answer.ok:
            choice = (answer.body.get("choices") or [{}])[0]
            tokens = (answer.body.get("usage") or {}).get("completion_tokens")
            attempt.finish_reason = choice.get("finish_reason")
            attempt.detail = {"completion_tokens": tokens}
            attempt.ok = tokens == options.max_tokens
            if not attempt.ok:
                attempt.error = f"{tokens} completion tokens, expected {options.max_tokens}"
        else:
            attempt.error = answer.error()
        attempts.append(attempt)
    passed = sum(a.ok for a in attempts)
    body.items = [a.model_dump() for a in attempts]
    body.summary = {
        "passed": passed,
        "requests": options.requests,
        "completion_tokens": sum(a.detail.get("completion_tokens") or 0 for a in attempts),
        "expected_tokens": options.requests * options.max_tokens,
        "seconds": sum(a.seconds or 0.0 for a in attempts),
        "http_status": {str(k): v for k, v in sorted(Counter(a.status for a in attempts).items())},
    }
    bad = next((a for a in attempts if not a.ok), None)
    body.failure = f"{passed}/{options.requests} passed; request {bad.id}: {bad.error}" if bad else None
    body.passed = bad is None
    return body
