"""`canary tools` and `canary json`: constrained decoding must return exactly what its schema fixes.

tools: a named `tool_choice` whose parameters schema fixes every argument with `const`
(`report_result(ok=true, label="SPEC_OK")`), N consecutive requests. Each must answer
HTTP 200 with exactly that call and `finish_reason="stop"`. With structured outputs the
grammar forces the arguments even from random weights, so anything else is the server's
fault (a speculative-decoding bug answered HTTP 500 on consecutive forced calls). Grammar
rejections the server logged during the suite are counted when its log is known.

json: the same with `response_format={"type": "json_schema"}`: the content must parse to
exactly the fixed object.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from forklift.canary.logscan import count_new
from forklift.quality.endpoint import Answer, Endpoint, post
from forklift.quality.schema import Attempt, SuiteBody


def _default_arguments() -> dict[str, Any]:
    return {"ok": True, "label": "SPEC_OK"}


@dataclass(frozen=True)
class StructuredOptions:
    repeats: int = 20
    name: str = "report_result"
    arguments: dict[str, Any] = field(default_factory=_default_arguments)
    max_tokens: int = 64
    prompt: str = "Report the result."


def const_schema(arguments: dict[str, Any]) -> dict[str, Any]:
    """An object schema that admits exactly `arguments`."""
    return {
        "type": "object",
        "properties": {key: {"const": value} for key, value in arguments.items()},
        "required": list(arguments),
        "additionalProperties": False,
    }


def tools_request(options: StructuredOptions) -> dict[str, Any]:
    tool = {"type": "function", "function": {"name": options.name, "parameters": const_schema(options.arguments)}}
    return {
        "messages": [{"role": "user", "content": options.prompt}],
        "tools": [tool],
        "tool_choice": {"type": "function", "function": {"name": options.name}},
        "max_tokens": options.max_tokens,
        "temperature": 0.0,
    }


def json_request(options: StructuredOptions) -> dict[str, Any]:
    schema = {"name": options.name, "schema": const_schema(options.arguments), "strict": True}
    return {
        "messages": [{"role": "user", "content": options.prompt}],
        "response_format": {"type": "json_schema", "json_schema": schema},
        "max_tokens": options.max_tokens,
        "temperature": 0.0,
    }


def _parsed(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


def judge_tool_call(attempt: Attempt, answer: Answer, options: StructuredOptions) -> None:
    choice = (answer.body.get("choices") or [{}])[0]
    calls = (choice.get("message") or {}).get("tool_calls") or []
    attempt.finish_reason = choice.get("finish_reason")
    functions = [call.get("function") or {} for call in calls]
    attempt.detail = {"calls": [{"name": f.get("name"), "arguments": f.get("arguments")} for f in functions]}
    exact = len(functions) == 1 and functions[0].get("name") == options.name
    exact = exact and _parsed(functions[0].get("arguments")) == options.arguments
    attempt.ok = exact and attempt.finish_reason == "stop"
    if not exact:
        attempt.error = (
            f"expected one call {options.name}({json.dumps(options.arguments)}), got {attempt.detail['calls']}"
        )
    elif not attempt.ok:
        attempt.error = f"finish_reason {attempt.finish_reason!r}, expected 'stop'"


def judge_json(attempt: Attempt, answer: Answer, options: StructuredOptions) -> None:
    choice = (answer.body.get("choices") or [{}])[0]
    content = (choice.get("message") or {}).get("content")
    attempt.finish_reason = choice.get("finish_reason")
    attempt.detail = {"content": content}
    exact = _parsed(content) == options.arguments
    attempt.ok = exact and attempt.finish_reason == "stop"
    if not exact:
        attempt.error = f"expected {json.dumps(options.arguments)}, got {content!r}"
    elif not attempt.ok:
        attempt.error = f"finish_reason {attempt.finish_reason!r}, expected 'stop'"


def _run(suite: str, endpoint: Endpoint, options: StructuredOptions) -> SuiteBody:
    request, judge = (tools_request, judge_tool_call) if suite == "tools" else (json_request, judge_json)
    body = SuiteBody(
        suite=suite,
        url=endpoint.url,
        model=endpoint.model,
        options={"repeats": options.repeats, "request": request(options), "expected": options.arguments},
    )
    log_start = endpoint.log_path.stat().st_size if endpoint.log_path and endpoint.log_path.exists() else None
    attempts = []
    for index in range(options.repeats):
        answer = post(endpoint, "/v1/chat/completions", request(options))
        attempt = Attempt(id=str(index), status=answer.status, seconds=answer.seconds)
        if answer.ok:
            judge(attempt, answer, options)
        else:
            attempt.error = answer.error()
        attempts.append(attempt)
    rejections = (
        count_new(endpoint, log_start, "grammar_rejection") if endpoint.log_path and log_start is not None else None
    )
    exact = sum(a.ok for a in attempts)
    body.items = [a.model_dump() for a in attempts]
    body.summary = {
        "exact": exact,
        "repeats": options.repeats,
        "http_status": {str(k): v for k, v in sorted(Counter(a.status for a in attempts).items())},
        "finish_reason": dict(Counter(str(a.finish_reason) for a in attempts)),
        "grammar_rejections": rejections,  # None: the server's log is not known
    }
    first_bad = next((a for a in attempts if not a.ok), None)
    if first_bad is not None:
        body.failure = f"{exact}/{options.repeats} exact; request {first_bad.id}: {first_bad.error}"
    elif rejections:
        body.failure = f"{rejections} grammar rejections in the server log ({endpoint.log_path})"
    body.passed = body.failure is None
    return body


def run_tools(endpoint: Endpoint, options: StructuredOptions) -> SuiteBody:
    return _run("tools", endpoint, options)


def run_json(endpoint: Endpoint, options: StructuredOptions) -> SuiteBody:
    return _run("json", endpoint, options)
