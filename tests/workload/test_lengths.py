"""Synthetic lengths: fixed or a range drawn per prompt from the workload's seed; bad text one line."""

import pytest

from forklift.errors import UsageError
from forklift.workload import synthetic_workload
from forklift.workload.lengths import parse_lengths


def test_a_count_and_a_range_parse_as_spans():
    assert parse_lengths("128:512", "--synthetic") == ((128, 128), (512, 512))
    assert parse_lengths(" 64-256 : 32-64 ", "--synthetic") == ((64, 256), (32, 64))


@pytest.mark.parametrize(
    "text", ["", "128", "1:2:3", "a:1", "0:8", "8:0", "9-8:1", "1-:1", "-5:1", "1:99999999", "1\n:2", "²:1", "1_0:1"]
)
def test_bad_lengths_are_one_line_naming_the_flag(text):
    with pytest.raises(UsageError) as caught:
        parse_lengths(text, "--synthetic")
    assert str(caught.value).startswith(f"--synthetic {text!r}: expected IN:OUT tokens") and "\n" not in str(
        caught.value
    )


def test_a_range_is_drawn_per_prompt_from_the_seed_and_fixed_lengths_keep_their_workload():
    drawn = synthetic_workload(input_tokens=(64, 256), output_tokens=(16, 32), count=200, seed=3)
    inputs = [i.synthetic_tokens for i in drawn.items]
    outputs = [i.max_tokens for i in drawn.items]
    assert min(inputs) >= 64 and max(inputs) <= 256 and len(set(inputs)) > 50  # spread over the range
    assert min(outputs) >= 16 and max(outputs) <= 32 and len(set(outputs)) == 17  # every length drawn
    again = synthetic_workload(input_tokens=(64, 256), output_tokens=(16, 32), count=200, seed=3)
    assert again.hash == drawn.hash and drawn.name == "synthetic-64-256in-16-32out"
    assert synthetic_workload(input_tokens=(64, 256), output_tokens=(16, 32), count=200, seed=4).hash != drawn.hash
    fixed = synthetic_workload(input_tokens=128, output_tokens=(8, 8), count=4)
    assert fixed.name == "synthetic-128in-8out" and {i.synthetic_tokens for i in fixed.items} == {128}
