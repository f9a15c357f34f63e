"""`quality ppl`: perplexity of a pinned corpus through the server's own prompt logprobs.

Each window is one `/v1/completions` request with `prompt_logprobs=0` and `max_tokens=1`:
the server returns the log-probability of every prompt token given the ones before it
(the first token has none). Perplexity is exp(-sum logprob / tokens) over all windows;
bits per byte is -sum logprob / ln 2 / UTF-8 bytes. A NaN, an infinity or an HTTP error
on any window fails the suite naming the window: it is never averaged away.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from forklift.quality.corpus import Corpus, inside, spans
from forklift.quality.endpoint import Endpoint, finite, post, tokenize
from forklift.quality.schema import SuiteBody, Window


@dataclass(frozen=True)
class PplOptions:
    corpus: Corpus
    unit: Literal["chars", "tokens"] = "chars"
    size: int = 1200  # characters or tokens per window
    windows: int | None = None  # the first N windows only (None: all)

    def record(self) -> dict[str, Any]:
        return {"corpus": self.corpus.identity(), "unit": self.unit, "size": self.size, "windows": self.windows}


def score_window(window: Window, answer_body: dict[str, Any]) -> None:
    """Fill a window's token count, summed logprob and NaN/inf flags from a completions answer."""
    choices = answer_body.get("choices") or [{}]
    entries = choices[0].get("prompt_logprobs")
    if not isinstance(entries, list) or len(entries) < 2:
        window.error = "no prompt_logprobs in the answer (does the server support prompt_logprobs?)"
        return
    total = 0.0
    for entry in entries[1:]:  # the first token is conditioned on nothing: no logprob
        value = _chosen_logprob(entry)
        window.tokens += 1
        if value is None or (isinstance(value, float) and math.isnan(value)):
            window.nan += 1
        elif not finite(value):
            window.inf += 1
        else:
            total += value
    window.logprob_sum = total


def _chosen_logprob(entry: Any) -> float | None:
    """vLLM's entry maps the prompt token (and, with prompt_logprobs > 0, its top-k) to a logprob; with 0 there is one."""
    if not isinstance(entry, dict) or len(entry) != 1:
        return None
    (value,) = entry.values()
    return value.get("logprob") if isinstance(value, dict) else None


def _windows(endpoint: Endpoint, options: PplOptions) -> list[tuple[Window, Any]]:
    """(window, prompt) pairs: text for character windows, token ids for token windows."""
    text = options.corpus.text
    name = options.corpus.name
    if options.unit == "chars":
        cuts = spans(len(text), options.size)[: options.windows]
        return [
            (Window(id=f"{name}:{i}", start=s, end=e, bytes=len(text[s:e].encode())), text[s:e])
            for i, (s, e) in enumerate(cuts)
        ]
    ids = tokenize(endpoint, text, special=False)
    cuts = spans(len(ids), options.size)[: options.windows]
    return [(Window(id=f"{name}:{i}", start=s, end=e), ids[s:e]) for i, (s, e) in enumerate(cuts)]


def failure(windows: list[Window], unit: str = "chars") -> str | None:
    """The first window that makes the number meaningless, named."""
    for window in windows:
        where = f"window {window.id} ({unit} {window.start}..{window.end})"
        if window.error:
            return f"{where}: {window.error}"
        if window.nan or window.inf:
            return f"{where}: {window.nan} NaN and {window.inf} infinite logprobs of {window.tokens} tokens"
    return None


def summarize(windows: list[Window]) -> dict[str, Any]:
    tokens = sum(w.tokens for w in windows)
    nll = -sum(w.logprob_sum or 0.0 for w in windows)
    sized = [w.bytes for w in windows if w.bytes is not None]
    return {
        "windows": len(windows),
        "tokens": tokens,
        "bytes": sum(sized) if len(sized) == len(windows) else None,
        "perplexity": math.exp(nll / tokens) if tokens else None,
        "bits_per_byte": nll / math.log(2) / sum(sized) if sized and len(sized) == len(windows) else None,
    }


def run_ppl(endpoint: Endpoint, options: PplOptions) -> SuiteBody:
    """Score every window; stops at the first that fails (the suite has failed, the rest cannot change that)."""
    record = options.record()
    engine = inside(options.corpus.path, endpoint.engine_roots)
    if engine is not None:
        record["inside_engine"] = str(engine)  # compare refuses it: it changes with the pin
    body = SuiteBody(suite="ppl", url=endpoint.url, model=endpoint.model, options=record)
    windows: list[Window] = []
    for window, prompt in _windows(endpoint, options):
        answer = post(
            endpoint,
            "/v1/completions",
            {"prompt": prompt, "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 0},
        )
        window.status = answer.status
        if answer.ok:
            score_window(window, answer.body)
        else:
            window.error = answer.error()
        windows.append(window)
        if failure([window]):
            break
    body.items = [w.model_dump() for w in windows]
    body.failure = failure(windows, options.unit)
    body.passed = body.failure is None
    if body.passed:
        body.summary = summarize(windows)
    return body
