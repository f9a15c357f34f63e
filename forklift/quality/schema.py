"""Receipt bodies of quality and canary suites: a verdict, its evidence, and one record per item.

Items carry ids (window id, question id, attempt number) so compare pairs the two sides
item by item; `options` holds everything that defines the run (corpus sha256, windows,
subset seed, shots, the prompt), so two receipts are comparable only when it matches.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class SuiteBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    suite: str = Field(description="ppl, gsm8k, tools, json, needle, cold-pair, soak, logscan")
    url: str
    model: str
    boot: dict[str, Any] | None = Field(default=None, description="the boot body, when forklift launched the server")
    options: dict[str, Any] = Field(default_factory=dict)
    passed: bool | None = Field(default=None, description="None while the suite runs")
    failure: str | None = Field(default=None, description="why it did not pass, in one line")
    summary: dict[str, Any] = Field(default_factory=dict)
    items: list[dict[str, Any]] = Field(default_factory=list)


class Window(BaseModel):
    """One perplexity window: where it lies in the corpus and what the server scored."""

    id: str
    start: int  # characters (or tokens, for token windows) into the corpus
    end: int
    bytes: int | None = None  # UTF-8 bytes of the window's text
    tokens: int = 0  # tokens scored (the first has no logprob)
    logprob_sum: float | None = None
    nan: int = 0
    inf: int = 0
    status: int | None = None
    error: str | None = None


class Question(BaseModel):
    """One GSM8K question: the gold number, what each extraction read, and whether it matched."""

    id: str
    gold: str
    strict: str | None
    flexible: str | None
    correct_strict: bool
    correct_flexible: bool
    finish_reason: str | None = None
    status: int | None = None
    output: str = ""


class Attempt(BaseModel):
    """One canary request: status, finish reason, what came back, and whether it was right."""

    id: str
    status: int | None = None
    ok: bool = False
    finish_reason: str | None = None
    seconds: float | None = None
    detail: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
