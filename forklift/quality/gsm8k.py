"""`quality gsm8k`: greedy exact match on the final number, strict and flexible, over a seeded subset.

The test set is the user's file (GSM8K's JSONL: question, answer ending in `#### N`).
Questions are identified by their line number, so two runs with the same n and seed
ask the same questions and compare question by question (McNemar, forklift.stats.quality).
Shots for k-shot prompts are drawn from the same file but never from the questions asked.

Extraction follows the usual GSM8K harness: strict reads the number after `#### `;
flexible reads the last number in the answer. Numbers are compared as decimals after
dropping thousands separators, a leading `$` and a trailing period, so "1,000" = "1000"
and "18.00" = "18".
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Literal

from forklift.errors import ForkliftError, UsageError
from forklift.quality.corpus import jsonl_rows, sha256_file
from forklift.quality.endpoint import Endpoint, post
from forklift.quality.options import at_least
from forklift.quality.schema import Question, SuiteBody

STRICT = re.compile(r"#### *(-?[$0-9.,]+)")
NUMBER = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?|-?\$?\.\d+")
STOP = ["Question:", "</s>", "<|im_end|>", "\n\n\n"]


@dataclass(frozen=True)
class Problem:
    id: str
    question: str
    answer: str  # the worked solution, ending in "#### N"
    gold: str


@dataclass(frozen=True)
class Gsm8kOptions:
    data: Path
    n: int = 50
    seed: int = 0
    shots: int = 0
    endpoint: Literal["chat", "completions"] = "completions"
    max_tokens: int = 256

    def __post_init__(self) -> None:
        at_least("gsm8k", {"--n": (self.n, 1), "--shots": (self.shots, 0), "--max-tokens": (self.max_tokens, 1)})
        if self.endpoint not in ("chat", "completions"):
            raise UsageError(f"gsm8k --endpoint {self.endpoint!r}: expected chat or completions")


def normalize(number: str | None) -> str | None:
    """A canonical decimal string ("1,000." -> "1000", "-3.50" -> "-3.5"); None when it is no number."""
    if number is None:
        return None
    cleaned = number.replace(",", "").replace("$", "").rstrip(".")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "0") else text


def strict_answer(text: str) -> str | None:
    found = STRICT.search(text)
    return normalize(found.group(1)) if found else None


def flexible_answer(text: str) -> str | None:
    found = NUMBER.findall(text)
    return normalize(found[-1]) if found else None


def load_problems(path: Path) -> list[Problem]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ForkliftError(f"--data {path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ForkliftError(f"--data {path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    problems = []
    for number, row in jsonl_rows(path, text, ("question", "answer")):
        gold = strict_answer(row["answer"])
        if gold is None:
            raise ForkliftError(f"{path}:{number}: the answer has no '#### N' line")
        problems.append(Problem(f"line{number}", row["question"], row["answer"], gold))
    if not problems:
        raise ForkliftError(f"--data {path}: no problems (GSM8K JSONL: one question and answer a line)")
    return problems


def choose(problems: list[Problem], n: int, shots: int, seed: int) -> tuple[list[Problem], list[Problem]]:
    """(questions, shots): a seeded sample of n questions, and k shots drawn from the rest."""
    if n < 1 or n + shots > len(problems):
        raise ForkliftError(f"gsm8k: n={n} plus {shots} shots needs that many problems; the file has {len(problems)}")
    rng = random.Random(seed)
    order = rng.sample(range(len(problems)), n + shots)
    asked = sorted(order[:n])
    return [problems[i] for i in asked], [problems[i] for i in order[n:]]


def completion_prompt(shots: list[Problem], problem: Problem) -> str:
    preamble = "".join(f"Question: {s.question}\nAnswer: {s.answer}\n\n" for s in shots)
    return f"{preamble}Question: {problem.question}\nAnswer:"


def chat_messages(shots: list[Problem], problem: Problem) -> list[dict[str, str]]:
    messages = []
    for shot in shots:
        messages += [
            {"role": "user", "content": f"Question: {shot.question}"},
            {"role": "assistant", "content": shot.answer},
        ]
    return [*messages, {"role": "user", "content": f"Question: {problem.question}"}]


def _output(options: Gsm8kOptions, answer_body: dict[str, Any]) -> tuple[str, str | None]:
    choice = (answer_body.get("choices") or [{}])[0]
    text = (choice.get("message") or {}).get("content") if options.endpoint == "chat" else choice.get("text")
    return text or "", choice.get("finish_reason")


def run_gsm8k(endpoint: Endpoint, options: Gsm8kOptions) -> SuiteBody:
    """Ask every chosen question once, greedily; an HTTP error on any question fails the suite, naming it."""
    problems = load_problems(options.data)
    asked, shots = choose(problems, options.n, options.shots, options.seed)
    template = (
        completion_prompt(shots, Problem("{id}", "{question}", "", ""))
        if options.endpoint == "completions"
        else json.dumps(chat_messages(shots, Problem("{id}", "{question}", "", "")))
    )
    body = SuiteBody(
        suite="gsm8k",
        url=endpoint.url,
        model=endpoint.model,
        options={
            "data": str(options.data),
            "data_sha256": sha256_file(options.data),
            "n": options.n,
            "seed": options.seed,
            "shots": options.shots,
            "shot_ids": [s.id for s in shots],
            "endpoint": options.endpoint,
            "max_tokens": options.max_tokens,
            "sampling": {"temperature": 0.0},
            "stop": STOP if options.endpoint == "completions" else None,
            "prompt": template,
        },
    )
    questions: list[Question] = []
    for problem in asked:
        request: dict[str, Any]
        if options.endpoint == "completions":
            request = {"prompt": completion_prompt(shots, problem), "stop": STOP}
            path = "/v1/completions"
        else:
            request = {"messages": chat_messages(shots, problem)}
            path = "/v1/chat/completions"
        answer = post(endpoint, path, {**request, "max_tokens": options.max_tokens, "temperature": 0.0})
        if not answer.ok:
            body.failure = f"question {problem.id}: {answer.error()}"
            break
        text, finish = _output(options, answer.body)
        strict, flexible = strict_answer(text), flexible_answer(text)
        questions.append(
            Question(
                id=problem.id,
                gold=problem.gold,
                strict=strict,
                flexible=flexible,
                correct_strict=strict == problem.gold,
                correct_flexible=flexible == problem.gold,
                finish_reason=finish,
                status=answer.status,
                output=text,
            )
        )
    body.items = [q.model_dump() for q in questions]
    body.passed = body.failure is None
    if body.passed:
        body.summary = {
            "questions": len(questions),
            "correct_strict": sum(q.correct_strict for q in questions),
            "correct_flexible": sum(q.correct_flexible for q in questions),
            "accuracy_strict": sum(q.correct_strict for q in questions) / len(questions),
            "accuracy_flexible": sum(q.correct_flexible for q in questions) / len(questions),
        }
    return body
