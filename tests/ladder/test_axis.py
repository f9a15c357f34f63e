"""The ladder's axis (values, ranges, flag or knob) and its recommendation: pure functions."""

import pytest

from forklift.errors import UsageError
from forklift.ladder.axis import parse_axis, recommend


def test_list_is_climbed_from_the_lowest_value_and_keeps_the_text_given():
    axis = parse_axis("gpu-memory-utilization=0.972,0.93,0.95")
    assert axis.values == ("0.93", "0.95", "0.972")
    assert not axis.is_env
    assert axis.set_item("0.95") == "args.gpu-memory-utilization=0.95"


def test_capitals_name_an_environment_knob():
    axis = parse_axis("VLLM_CPU_KVCACHE_SPACE=1,2,4")
    assert axis.is_env
    assert axis.set_item("2") == "env.VLLM_CPU_KVCACHE_SPACE=2"


def test_range_is_inclusive_and_exact_in_decimal():
    assert parse_axis("gpu-memory-utilization=0.90:0.97:0.01").values == tuple(f"0.{n}" for n in range(90, 98))
    assert parse_axis("--max-num-seqs=64:256:64").values == ("64", "128", "192", "256")


@pytest.mark.parametrize(
    ("text", "culprit"),
    [
        ("max-model-len", "expected KEY=V1,V2"),
        ("max-model-len=", "expected KEY=V1,V2"),
        ("Max Len=1,2", "neither a flag"),
        ("max-model-len=1024,lots", "'lots' is not a number"),
        ("max-model-len=1024,1024", "listed twice"),
        ("max-model-len=1024", "at least two values"),
        ("gpu-memory-utilization=0.9:0.8:0.01", "STOP >= START"),
        ("gpu-memory-utilization=0.9:0.95", "START:STOP:STEP"),
        ("max-model-len=1:100000:1", "more than 64 boots"),
        ("max-model-len=1,nan", "not a finite number"),
    ],
)
def test_bad_axis_is_one_line_naming_it(text, culprit):
    with pytest.raises(UsageError) as caught:
        parse_axis(text)
    assert culprit in str(caught.value)
    assert "\n" not in str(caught.value)


AXIS = parse_axis("gpu-memory-utilization=0.93,0.94,0.95,0.96,0.972")


def test_recommends_one_step_below_the_highest_pass():
    result = recommend(AXIS, {"0.93": True, "0.94": True, "0.95": True, "0.96": True, "0.972": False})
    assert (result.highest_pass, result.recommended) == ("0.96", "0.95")
    assert result.note == "one step below the highest pass"


def test_margin_is_taken_off_the_highest_pass():
    result = recommend(AXIS, {"0.93": True, "0.96": True, "0.972": False}, margin="0.02")
    assert (result.highest_pass, result.recommended) == ("0.96", "0.94")


def test_no_pass_and_lowest_pass_recommend_nothing_and_say_why():
    assert recommend(AXIS, {"0.93": False}).recommended is None
    assert "no value passed" in recommend(AXIS, {"0.93": False}).note
    lowest = recommend(AXIS, {"0.93": True, "0.94": False})
    assert (lowest.highest_pass, lowest.recommended) == ("0.93", None)
    assert "no step below" in lowest.note


def test_a_failure_below_the_highest_pass_is_named():
    # a boot refused cold and passed warm: the ladder is not monotonic, and the note says where
    result = recommend(AXIS, {"0.93": True, "0.94": False, "0.95": True, "0.96": False})
    assert result.highest_pass == "0.95"
    assert "not monotonic: 0.94 failed below it" in result.note
