"""The server a suite talks to, and the plain (non-streaming) JSON requests suites send it.

Quality and canary suites are serial and judge answers, not timing, so they use one
synchronous httpx client rather than the bench's streaming one. An HTTP error status is
an answer (the suite judges it); only a server that cannot be reached raises.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from forklift.engines import DEFAULT_ENGINE
from forklift.errors import ForkliftError


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible server: where it listens, the served model, and its log when forklift launched it."""

    url: str
    model: str
    timeout: float = 600.0
    log_path: Path | None = None  # logscan and grammar-rejection counts read it
    engine: str = DEFAULT_ENGINE  # the adapter naming its metrics and log patterns
    engine_roots: tuple[Path, ...] = ()  # where the engine under test is installed (corpora there are refused)


@dataclass
class Answer:
    status: int
    body: Any  # parsed JSON (NaN and Infinity allowed: a NaN logprob must reach the scorer), else None
    text: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.status == 200 and isinstance(self.body, dict)

    def error(self) -> str:
        """One line: the status and the start of what the server said."""
        return f"HTTP {self.status}: {' '.join(self.text.split())[:200]}"


def _parse(text: str) -> Any:
    try:
        return json.loads(text)  # json (unlike orjson) reads NaN / -Infinity, as vLLM may write them
    except ValueError:
        return None


def _request(endpoint: Endpoint, method: str, path: str, body: dict[str, Any] | None) -> Answer:
    started = time.perf_counter()
    try:
        response = httpx.request(method, endpoint.url.rstrip("/") + path, json=body, timeout=endpoint.timeout)
    except httpx.TimeoutException:
        raise ForkliftError(f"{endpoint.url}{path}: no answer within {endpoint.timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise ForkliftError(f"{endpoint.url}{path}: {type(exc).__name__}: {exc}; is the server up?") from None
    seconds = time.perf_counter() - started
    return Answer(response.status_code, _parse(response.text), response.text, seconds)


def post(endpoint: Endpoint, path: str, body: dict[str, Any]) -> Answer:
    return _request(endpoint, "POST", path, {"model": endpoint.model, **body})


def get(endpoint: Endpoint, path: str) -> Answer:
    return _request(endpoint, "GET", path, None)


def counter(endpoint: Endpoint, role: str) -> float | None:
    """A server-wide counter (by adapter role, e.g. prefix_cache_hits) from /metrics; None when not exposed."""
    # local: bench.metrics pulls aiohttp (~150 ms); only the counter read needs it
    from forklift.bench.metrics import metric_names, parse_snapshot

    family = metric_names(endpoint.engine).get(role)
    answer = get(endpoint, "/metrics")
    if answer.status != 200 or family is None:
        return None
    snapshot = parse_snapshot(answer.text)
    return sum(snapshot[family].values()) if family in snapshot else None


def tokenize(endpoint: Endpoint, text: str, *, special: bool) -> list[int]:
    """Token ids as the server's own tokenizer makes them (vLLM's /tokenize)."""
    answer = post(endpoint, "/tokenize", {"prompt": text, "add_special_tokens": special})
    tokens = answer.body.get("tokens") if answer.ok else None
    if not isinstance(tokens, list):
        raise ForkliftError(f"{endpoint.url}/tokenize: {answer.error()}; token windows need the server's tokenizer")
    return tokens


def finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
