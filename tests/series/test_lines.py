"""line_opcodes, the matcher diff rendering and flip triage share: its opcodes rebuild the new side from the old."""

from __future__ import annotations

import difflib

from hypothesis import given
from hypothesis import strategies as st

from forklift.series.lines import _Matcher, line_opcodes

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


def _edited(base: list[str], edits: list[tuple[int, int, list[str]]]) -> list[str]:
    out = list(base)
    for at, cut, put in edits:
        at %= len(out) + 1
        out[at : at + cut] = put
    return out


BASES = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "\n", "}\n"]), min_size=20, max_size=200)
PUT = st.lists(st.sampled_from(["a\n", "x\n", "\n"]), max_size=4)
EDITS = st.lists(st.tuples(st.integers(0, 400), st.integers(0, 5), PUT), max_size=6)


@given(BASES, st.booleans(), EDITS, EDITS)
def test_the_sampled_search_gives_difflibs_own_opcodes(base, twice, edits_old, edits_new):
    """Two edited copies of one text (itself twice over, for ties between equally long runs) hold long
    runs in common, where the search samples: its opcodes are those of difflib's full search (the overlay
    hash of every receipt written is over them)."""
    text = base + base if twice else base
    old, new = _edited(text, edits_old), _edited(text, edits_new)
    full = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    assert _Matcher(None, old, new, autojunk=False).get_opcodes() == full
