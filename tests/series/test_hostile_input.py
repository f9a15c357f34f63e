"""Series and patch input from a careless or hostile pull request: one line naming the culprit, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from forklift.errors import ForkliftError
from forklift.series.model import parse_patch, parse_series_file

PATCH = "--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-VALUE = 1\n+VALUE = 2\n"


def test_nul_byte_in_a_patch_path_is_one_line():
    with pytest.raises(ForkliftError, match=r"^one\.patch: path 'a/a\\x00\.py' holds a NUL byte$"):
        parse_patch("one.patch", PATCH.format(path="a\0.py"), 1)


def test_p10_is_a_strip_level_not_an_unsupported_option():
    assert parse_series_file("deep.patch -p10\n", Path("series")) == [("deep.patch", 10)]
    deep = "/".join(f"d{i}" for i in range(10)) + "/m.py"
    assert parse_patch("deep.patch", PATCH.format(path=deep).replace("a/", "", 1).replace("b/", "", 1), 10)
    with pytest.raises(ForkliftError, match=r"has no component left after -p10"):
        parse_patch("short.patch", PATCH.format(path="m.py"), 10)


def test_an_option_forklift_does_not_read_is_worded_as_such():
    with pytest.raises(ForkliftError, match=r"^series:1: unsupported series option '-R' \(forklift reads only -pN"):
        parse_series_file("one.patch -R\n", Path("series"))
