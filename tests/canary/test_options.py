"""Canary options and the needle's placement: pure functions, no server."""

from __future__ import annotations

import re

import pytest

from forklift.canary import ColdPairOptions, NeedleOptions, SoakOptions, StructuredOptions
from forklift.canary.context import FILLER, QUESTION, needle_prompt
from forklift.errors import UsageError

CONTEXT = FILLER * 4
NEEDLE = "The passphrase is blue-harbor-7391. "


@pytest.mark.parametrize("depth", [0.0, 0.01])
def test_a_needle_before_the_first_sentence_end_sits_at_the_very_start(depth):
    prompt = needle_prompt(CONTEXT, "blue-harbor-7391", depth)
    assert prompt.startswith(f"{NEEDLE}{CONTEXT}")


def test_a_needle_sits_at_a_sentence_end_at_its_depth():
    half = needle_prompt(CONTEXT, "blue-harbor-7391", 0.5)
    before, after = half.removesuffix(f"\n{QUESTION}").split(NEEDLE)
    assert before + after == CONTEXT and before.endswith(". ")
    assert 0.4 < len(before) / len(CONTEXT) <= 0.5
    end = needle_prompt(CONTEXT, "blue-harbor-7391", 1.0)
    assert end.startswith(f"{CONTEXT}{NEEDLE}")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: NeedleOptions(depths=(0.5, 1.5)), "needle --depth 1.5: expected a fraction from 0 to 1"),
        (lambda: NeedleOptions(depths=()), "needle --depth: give at least one depth"),
        (
            lambda: NeedleOptions(needle='say "hi"'),
            "needle --needle 'say \"hi\"': expected one line without '\"' (the quote ends the answer)",
        ),
        (
            lambda: NeedleOptions(needle="two\nlines"),
            "needle --needle 'two\\nlines': expected one line without '\"' (the quote ends the answer)",
        ),
        (
            lambda: NeedleOptions(needle=" "),
            "needle --needle ' ': expected one line without '\"' (the quote ends the answer)",
        ),
        (lambda: NeedleOptions(tokens=0), "needle --context-tokens 0: must be at least 1"),
        (lambda: ColdPairOptions(tokens=-1), "cold-pair --context-tokens -1: must be at least 1"),
        (lambda: SoakOptions(max_tokens=0), "soak --soak-tokens 0: must be at least 1"),
        (lambda: SoakOptions(requests=0), "soak --requests 0: must be at least 1"),
        (lambda: StructuredOptions(max_tokens=0), "tools/json --max-tokens 0: must be at least 1"),
        (lambda: StructuredOptions(repeats=0), "tools/json --repeats 0: must be at least 1"),
    ],
)
def test_options_out_of_range_are_one_line_naming_the_option(make, message):
    with pytest.raises(UsageError, match=f"^{re.escape(message)}$"):
        make()
