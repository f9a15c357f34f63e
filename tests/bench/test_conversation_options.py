"""A multi-turn bench's options: what it takes, what it refuses, each in one line naming the flag."""

import pytest

from forklift.bench.options import BenchOptions
from forklift.errors import UsageError
from forklift.workload.conversation import conversation_workload

URL = "http://127.0.0.1:1"


def test_the_workload_is_every_conversations_turns_in_the_order_alternating_sends_them():
    workload = conversation_workload(conversations=2, turns=2, user_words=5, output_tokens=3)
    assert [(i.id, i.conversation, i.turn) for i in workload.items] == [
        ("conv000-t01", 0, 1),
        ("conv001-t01", 1, 1),
        ("conv000-t02", 0, 2),
        ("conv001-t02", 1, 2),
    ]
    assert all(len(i.messages[0]["content"].split()) == 5 and i.max_tokens == 3 for i in workload.items)
    other = conversation_workload(conversations=2, turns=2, user_words=5, output_tokens=3, interleave="concurrent")
    # the same turns, sent otherwise: the workload's identity says which
    assert workload.hash == other.hash and workload.name != other.name


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"conversations": 2, "cohort": "q.jsonl"}, "--conversations takes --synthetic IN:OUT"),
        ({"conversations": 2, "synthetic": "8:8", "concurrency": "1,2"}, "not --concurrency"),
        ({"conversations": 2, "synthetic": "8:8", "rate": 2.0}, "not --rate"),
        ({"conversations": 0, "synthetic": "8:8"}, "--conversations 0: expected 1 to 1000"),
        ({"conversations": 2, "synthetic": "8:8", "turns": 101}, "--turns 101: expected 1 to 100"),
        ({"conversations": 2, "synthetic": "8:8", "interleave": "zigzag"}, "--interleave 'zigzag': expected"),
    ],
)
def test_a_bad_multi_turn_option_is_one_line_naming_it(options, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        BenchOptions(url=URL, **options)
