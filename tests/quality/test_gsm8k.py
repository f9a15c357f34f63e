"""GSM8K scoring on the real test-set format: `####` lines, thousands separators, negatives, decimals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forklift.errors import ForkliftError, UsageError
from forklift.quality.gsm8k import (
    Gsm8kOptions,
    chat_messages,
    choose,
    completion_prompt,
    flexible_answer,
    load_problems,
    normalize,
    strict_answer,
)

TEST_SET = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "gsm8k" / "test.jsonl"


@pytest.fixture(scope="module")
def problems():
    if not TEST_SET.exists():
        pytest.skip(f"GSM8K test set not found at {TEST_SET} (the project's shared folder)")
    return load_problems(TEST_SET)


def test_every_gold_answer_of_the_real_test_set_parses(problems):
    assert len(problems) == 1319
    assert problems[0].gold == "18" and problems[0].id == "line1"
    assert problems[2].gold == "70000"
    by_line = {p.id: p.gold for p in problems}
    # Real lines with a thousands separator and with a negative answer.
    raw = TEST_SET.read_text().splitlines()
    comma = next(i for i, line in enumerate(raw, 1) if "#### 2,125" in json.loads(line)["answer"])
    negative = next(i for i, line in enumerate(raw, 1) if "#### -" in json.loads(line)["answer"])
    assert by_line[f"line{comma}"] == "2125"
    assert by_line[f"line{negative}"].startswith("-")


@pytest.mark.parametrize(
    ("text", "strict", "flexible"),
    [
        ("She pays 3 * 6 = 18 dollars.\n#### 18", "18", "18"),
        ("Total is 1,000 + 1,125 = 2,125\n#### 2,125", "2125", "2125"),
        ("It drops by 7 degrees.\n#### -7", "-7", "-7"),
        ("Each costs $3.50, so 2 cost $7.00.\n#### 7.00", "7", "7"),
        ("The answer is -3.5.", None, "-3.5"),
        ("So the answer is $1,234.50.", None, "1234.5"),
        ("#### 12.\nThen 40 more.", "12", "40"),
        ("no number at all", None, None),
    ],
)
def test_strict_and_flexible_extraction(text, strict, flexible):
    assert strict_answer(text) == strict
    assert flexible_answer(text) == flexible


def test_numbers_compare_as_decimals():
    assert normalize("18.00") == normalize("18") == "18"
    assert normalize("1,000.") == "1000"
    assert normalize("-0") == "0"
    assert normalize("$.5") == "0.5"
    assert normalize("1.2.3") is None


def test_subset_is_seeded_and_shots_never_asked(problems):
    asked, shots = choose(problems, 50, 5, seed=3)
    again, shots_again = choose(problems, 50, 5, seed=3)
    assert [p.id for p in asked] == [p.id for p in again] and [p.id for p in shots] == [p.id for p in shots_again]
    assert not {p.id for p in asked} & {p.id for p in shots}
    assert [p.id for p in choose(problems, 50, 5, seed=4)[0]] != [p.id for p in asked]
    with pytest.raises(ForkliftError, match="n=2000 plus 0 shots"):
        choose(problems, 2000, 0, seed=0)


def test_prompts_hold_the_shots_worked_answers(problems):
    asked, shots = choose(problems, 1, 5, seed=0)
    prompt = completion_prompt(shots, asked[0])
    assert prompt.count("Question: ") == 6 and prompt.count("#### ") == 5
    assert prompt.endswith(f"Question: {asked[0].question}\nAnswer:")
    messages = chat_messages(shots, asked[0])
    assert [m["role"] for m in messages] == ["user", "assistant"] * 5 + ["user"]
    assert completion_prompt([], asked[0]) == f"Question: {asked[0].question}\nAnswer:"


def test_a_line_without_a_final_answer_is_named(tmp_path):
    data = tmp_path / "bad.jsonl"
    data.write_text('{"question": "q", "answer": "#### 4"}\n{"question": "q2", "answer": "four"}\n')
    with pytest.raises(ForkliftError, match=r"bad.jsonl:2: the answer has no '#### N' line"):
        load_problems(data)
    data.write_text('{"question": "q"}\n')
    with pytest.raises(ForkliftError, match=r"bad.jsonl:1: expected string keys 'question' and 'answer'"):
        load_problems(data)


def test_an_empty_or_binary_test_set_is_one_line_naming_the_file(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(ForkliftError, match=r"^--data .*empty.jsonl: no problems \(GSM8K JSONL"):
        load_problems(empty)
    binary = tmp_path / "test.jsonl.gz"
    binary.write_bytes(b"\x1f\x8b\x08\x00\xff")
    with pytest.raises(ForkliftError, match=r"^--data .*test.jsonl.gz: not UTF-8 \(invalid start byte at byte 1\)$"):
        load_problems(binary)


@pytest.mark.parametrize(
    ("changes", "message"),
    [({"n": 0}, "gsm8k --n 0"), ({"shots": -2}, "gsm8k --shots -2"), ({"max_tokens": 0}, "gsm8k --max-tokens 0")],
)
def test_options_out_of_range_are_refused(changes, message):
    with pytest.raises(UsageError, match=f"^{message}: must be at least"):
        Gsm8kOptions(Path("test.jsonl"), **changes)


def test_an_unknown_endpoint_is_refused_naming_it():
    with pytest.raises(UsageError, match=r"^gsm8k --endpoint 'responses': expected chat or completions$"):
        Gsm8kOptions(Path("test.jsonl"), endpoint="responses")  # type: ignore[arg-type]
