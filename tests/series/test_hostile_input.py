"""Series options as quilt writes them: -p10 is a strip level; an option forklift does not read is named as such.

(A NUL byte in a patch path is tested with the parser, in test_model.py and test_engine.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from forklift.errors import ForkliftError
from forklift.series.model import parse_patch, parse_series_file

PATCH = "--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-VALUE = 1\n+VALUE = 2\n"


def test_p10_is_a_strip_level_not_an_unsupported_option():
    assert parse_series_file("deep.patch -p10\n", Path("series")) == [("deep.patch", 10)]
    deep = "/".join(f"d{i}" for i in range(10)) + "/m.py"
    assert parse_patch("deep.patch", PATCH.format(path=deep).replace("a/", "", 1).replace("b/", "", 1), 10)
    with pytest.raises(ForkliftError, match=r"has no component left after -p10"):
        parse_patch("short.patch", PATCH.format(path="m.py"), 10)


def test_an_option_forklift_does_not_read_is_worded_as_such():
    with pytest.raises(ForkliftError, match=r"^series:1: unsupported series option '-R' \(forklift reads only -pN"):
        parse_series_file("one.patch -R\n", Path("series"))
