"""tree_path, the tree-relative path of a diff header name, read without a Path per name (glibc's series
names 7,382): the same path, or the same refusal, as PurePosixPath's reading of it."""

from __future__ import annotations

from pathlib import PurePosixPath

from hypothesis import given
from hypothesis import strategies as st

from forklift.series.diff import PatchError, tree_path

NAMES = st.lists(st.sampled_from(["a", "b.c", "", ".", "..", "/", "//"]), max_size=6).map("/".join)


def _as_path_reads_it(text: str, strip: int) -> str | None:
    """The reading tree_path had when it went through PurePosixPath (None: refused)."""
    parts = PurePosixPath(text).parts
    if text.startswith("/") or (len(parts) <= strip and strip):
        return None
    rel = PurePosixPath(*parts[strip:])
    return None if ".." in rel.parts or not rel.parts else rel.as_posix()


@given(NAMES, st.integers(0, 3))
def test_a_name_reads_as_a_posix_path_would(text, strip):
    try:
        found = tree_path("p.patch", text.encode(), strip)
    except PatchError:
        found = None
    assert found == _as_path_reads_it(text, strip)
