"""line_opcodes, the matcher diff rendering and flip triage share: its opcodes rebuild the new side from the old."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from forklift.series.lines import line_opcodes

LINES = st.lists(st.sampled_from(["a\n", "b\n", "c\n", ""]), max_size=30)  # few values: repeats make matches ambiguous


def _rebuilt(old: list, new: list) -> list:
    """Replay the opcodes: they must cover both sides in order, and `equal` must mean equal."""
    out: list = []
    at_old = at_new = 0
    for tag, i1, i2, j1, j2 in line_opcodes(old, new):
        assert (i1, j1) == (at_old, at_new), "opcodes leave a gap or overlap"
        if tag == "equal":
            assert old[i1:i2] == new[j1:j2]
            out += old[i1:i2]
        else:
            out += new[j1:j2]
        at_old, at_new = i2, j2
    assert (at_old, at_new) == (len(old), len(new))
    return out


@given(LINES, LINES)
def test_the_opcodes_turn_old_into_new(old, new):
    assert _rebuilt(old, new) == new
    assert _rebuilt([line.encode() for line in old], [line.encode() for line in new]) == [line.encode() for line in new]


def test_a_common_head_and_tail_stay_equal_around_the_change():
    old, new = ["h\n", "x\n", "t\n"], ["h\n", "y\n", "z\n", "t\n"]
    assert line_opcodes(old, new) == [("equal", 0, 1, 0, 1), ("replace", 1, 2, 1, 3), ("equal", 2, 3, 3, 4)]
