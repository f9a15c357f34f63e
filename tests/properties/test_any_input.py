"""Property tests: any input to the patch parser and engine, the series reader and the config loader gives a
result or a ForkliftError (one line), never another exception.

Bounded for CI (the "ci" profile: a few seconds); `scripts/fuzz` runs the "fuzz" profile for a long search.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forklift.config.load import decode_config, parse_config
from forklift.errors import ForkliftError
from forklift.series.engine import apply_patch
from forklift.series.model import parse_patch, parse_series_file

settings.register_profile(
    "ci", max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "fuzz", max_examples=int(os.environ.get("FORKLIFT_FUZZ_EXAMPLES", "50000")), deadline=None, database=None
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Lines a diff is made of, mutated and mixed with noise, so the search reaches deep into the parser.
DIFF_LINES = st.sampled_from(
    [
        "--- a/m.py",
        "+++ b/m.py",
        "--- /dev/null",
        "+++ /dev/null",
        "diff --git a/m.py b/m.py",
        "rename from m.py",
        "rename to n.py",
        "new file mode 100644",
        "deleted file mode 100644",
        "index 0000000..1111111 100644",
        "@@ -1 +1 @@",
        "@@ -1,3 +1,4 @@ def f():",
        "@@ -0,0 +1 @@",
        "@@ -2,0 +3,2 @@",
        "@@ -99999999999999999999 +1 @@",
        "-VALUE = 1",
        "+VALUE = 2",
        " context",
        "",
        "\\ No newline at end of file",
        "--- a/../../etc/passwd",
        "+++ b/\0nul",
        "Subject: [PATCH] a change",
        "Forwarded: not-needed",
    ]
)
BODY = st.sampled_from(["VALUE = 1", "VALUE = 2", "context", "more", "", "\r", "\0\xff"])


SKEW = st.sampled_from([0, 0, 0, 0, 0, 1, -1])  # a header that lies, now and then


@st.composite
def hunk(draw) -> str:
    """A hunk whose header may or may not agree with its body, over lines the tree holds."""
    lines = draw(st.lists(st.tuples(st.sampled_from("+- "), BODY), min_size=1, max_size=6))
    old = sum(kind != "+" for kind, _ in lines) + draw(SKEW)
    new = sum(kind != "-" for kind, _ in lines) + draw(SKEW)
    start = draw(st.integers(0, 5))
    body = "".join(f"{kind}{text}\n" for kind, text in lines)
    tail = draw(st.sampled_from(["", "", "", "\\ No newline at end of file\n"]))
    return f"@@ -{start},{old} +{start},{new} @@\n{body}{tail}"


@st.composite
def file_patch(draw) -> str:
    old, new = draw(
        st.sampled_from(
            [
                ("a/m.py", "b/m.py"),
                ("/dev/null", "b/n.py"),
                ("a/m.py", "/dev/null"),
                ("a/bin", "b/bin"),
                ("a/gone.py", "b/gone.py"),
                ("m.py", "m.py"),
            ]
        )
    )
    hunks = "".join(draw(st.lists(hunk(), min_size=1, max_size=3)))
    return f"--- {old}\n+++ {new}\n{hunks}"


NOISE = st.lists(st.one_of(DIFF_LINES, st.text(max_size=30)), max_size=40).map("\n".join)
PATCH_TEXT = st.one_of(
    NOISE,
    st.lists(file_patch(), min_size=1, max_size=3).map("".join),
    st.tuples(NOISE, file_patch()).map("\n".join),
)
TREE = {"m.py": b"VALUE = 1\ncontext\nmore\n", "n.py": b"", "bin": b"\0\xff\r\n"}


@given(text=PATCH_TEXT, strip=st.integers(min_value=0, max_value=12))
def test_any_patch_parses_and_applies_or_is_a_forklift_error(text, strip):
    try:
        patch = parse_patch("p.patch", text, strip)
    except ForkliftError:
        return
    with contextlib.suppress(ForkliftError):
        apply_patch(TREE.get, patch)


SERIES_LINES = st.one_of(
    st.sampled_from(["one.patch", "two.patch -p0", "x -p10", "x -R", "# comment", "a/b.patch", "..", "one.patch"]),
    st.text(max_size=20),
)


@given(lines=st.lists(SERIES_LINES, max_size=12))
def test_any_series_file_parses_or_is_a_forklift_error(lines):
    with contextlib.suppress(ForkliftError):
        parse_series_file("\n".join(lines), Path("series"))


TOML_LINES = st.sampled_from(
    [
        "[upstream]",
        'source = "path"',
        'source = "pypi"',
        'source = "git"',
        'path = "up"',
        'sha256 = "' + "0" * 64 + '"',
        'commit = "' + "1" * 40 + '"',
        'package = "vllm"',
        'version = "0.1"',
        'url = "u"',
        'tag = "v1"',
        "[profiles.a]",
        "[profiles.b]",
        'extends = "a"',
        'extends = "b"',
        'extends = "zz"',
        "health_timeout = inf",
        "health_timeout = -1",
        "port = 0",
        "port = 99999999999999999999",
        'args = { "" = 1 }',
        "args = { seed = nan, max-model-len = 4096, x = [1, [2, [3]]] }",
        "env = { A = 1 }",
        "[profiles.a.axes.spec.on]",
        "defaults = { spec = 'on' }",
        "[series]",
        "contract = ['x.patch', 'a/b']",
        "patches_md = ''",
        "[engine]",
        'kind = "sglang"',
        "x = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        "a.b.c = 1",
        "d = 2026-12-01",
    ]
)


@given(lines=st.lists(st.one_of(TOML_LINES, st.text(max_size=20)), max_size=25))
def test_any_config_text_loads_or_is_a_config_error(lines):
    with contextlib.suppress(ForkliftError):
        parse_config("\n".join(lines), Path("forklift.toml"))


@given(raw=st.binary(max_size=200))
def test_any_config_bytes_decode_or_are_a_config_error(raw):
    with contextlib.suppress(ForkliftError):
        parse_config(decode_config(raw, Path("forklift.toml")), Path("forklift.toml"))
