"""Property tests: any input to the patch parser and engine, the series reader and the config loader gives a
result or a ForkliftError (one line), never another exception; and the result holds together (counts agree,
verdicts match their hunks, entries keep the file's order, the config model has the keys given).

Bounded for CI (the "ci" profile: a few seconds); `scripts/fuzz` runs the "long" profile (conftest.py).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from forklift.config.load import Config, decode_config, parse_config
from forklift.config.schema import ForkliftToml
from forklift.config.toml import tomllib
from forklift.errors import ForkliftError
from forklift.series.apply import APPLIED, APPLIERS, PatchResult, apply_patch
from forklift.series.diff import FilePatch, Hunk, split_lines
from forklift.series.model import Patch, parse_patch, parse_series_file, retired_entries, skip_entries

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
        'diff --git "a/x\\ny.py" "b/x\\ny.py"',  # git's C-quoted names: a newline or CR inside a path
        '--- "a/x\\ry.py"',
        '+++ "b/x\\ry.py"',
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


def assert_one_line(error: ForkliftError) -> None:
    """What the CLI prints after 'error: ': one non-empty line."""
    message = str(error)
    assert message.strip(), f"{type(error).__name__} with an empty message"
    assert "\n" not in message and "\r" not in message, f"message is not one line: {message!r}"


def is_subsequence(part: tuple[bytes, ...], whole: tuple[bytes, ...]) -> bool:
    rest = iter(whole)
    return all(any(line == other for other in rest) for line in part)


def assert_hunk_holds(hunk: Hunk) -> None:
    """Old side = context + removed lines, new side = context + added, in order; something changes."""
    context = len(hunk.old) - len(hunk.removed)
    assert context == len(hunk.new) - len(hunk.added) >= 0
    assert hunk.added or hunk.removed
    assert is_subsequence(hunk.removed, hunk.old) and is_subsequence(hunk.added, hunk.new)
    assert hunk.leading_context + hunk.trailing_context <= context
    assert hunk.old[: hunk.leading_context] == hunk.new[: hunk.leading_context]
    assert hunk.old[len(hunk.old) - hunk.trailing_context :] == hunk.new[len(hunk.new) - hunk.trailing_context :]
    assert hunk.old_start >= 0 and hunk.new_start >= 0 and hunk.first >= hunk.old_start


def assert_file_holds(fp: FilePatch) -> None:
    assert fp.old_path is not None or fp.new_path is not None
    for path in (fp.old_path, fp.new_path, *(fp.gnu_names or ()), *fp.gnu_choices):
        if path is not None:
            assert path and not path.startswith("/") and ".." not in path.split("/") and "\0" not in path
    assert fp.git or fp.hunks, "a plain ---/+++ stanza without hunks"
    assert not (fp.binary and fp.hunks)
    assert fp.added == sum(len(h.added) for h in fp.hunks) and fp.removed == sum(len(h.removed) for h in fp.hunks)
    for h in fp.hunks:
        assert_hunk_holds(h)


def assert_result_holds(result: PatchResult, patch: Patch, applier: str) -> None:
    """The verdict agrees with its hunks and problems; every hunk named is one of the patch's."""
    assert result.name == patch.name and result.applier == applier
    hunks_at: dict[str, int] = {}  # path -> most hunks a stanza of it has (a stanza without any reports one)
    for fp in patch.files:
        gnu = fp.as_gnu_reads_it(lambda name: name in TREE)
        for path in {fp.path, gnu.path, fp.old_path, gnu.old_path}:  # a missing file is named as the tool reads it
            if path is not None:
                hunks_at[path] = max(hunks_at.get(path, 1), len(fp.hunks))
    for h in result.hunks:
        assert h.file in hunks_at and 1 <= h.index <= hunks_at[h.file], h
        assert (h.fuzz > 0) == (h.status == "fuzz") and (h.status != "fails" or h.line is None)
        assert h.line is None or h.line >= 1, h
    assert all(p.file in hunks_at or p.file == patch.name for p in result.problems)
    assert result.applies == (not result.problems and all(h.status in APPLIED for h in result.hunks))
    assert result.files == (result.landed if result.applies else {})
    for path, content in result.landed.items():
        assert path in hunks_at and (content is None or isinstance(content, bytes))
    assert bool(result.reasons()) != result.applies
    stanzas = Counter(path for fp in patch.files for path in {fp.old_path, fp.new_path})
    for fp in patch.files:  # a file changed in place by one stanza: old lines - removed + added
        before, after = TREE.get(fp.path), result.files.get(fp.path)
        in_place = fp.old_path == fp.new_path and stanzas[fp.path] == 1 and not fp.binary and not fp.gnu_choices
        if in_place and before and after is not None:
            assert len(split_lines(after)) == len(split_lines(before)) - fp.removed + fp.added
    for line in (*result.reasons(), *result.disagreements):
        assert line.strip() and "\n" not in line and "\r" not in line, line


@given(text=PATCH_TEXT, strip=st.integers(min_value=0, max_value=12), applier=st.sampled_from(APPLIERS))
@example(text='diff --git "a/x\\ny.py" "b/x\\ny.py"', strip=0, applier="gnu-patch")  # found by the fuzz profile
# found by the fuzz profile: a rename GNU patch reads at -p0 as a/m.py -> b/m.py; the missing file is a/m.py
@example(text="diff --git a/m.py b/m.py\nrename from m.py", strip=0, applier="gnu-patch")
# found by the fuzz profile: a line added without its newline at the top of a file (GNU patch writes the newline)
@example(
    text="--- m.py\n+++ m.py\n@@ -0,0 +0,1 @@\n+VALUE = 1\n\\ No newline at end of file\n", strip=0, applier="gnu-patch"
)
@example(text='--- "a/x\\ry.py"\n+++ "b/x\\ry.py"\n@@ -1 +1 @@\n-a\n+b\n', strip=1, applier="git-apply")
def test_any_patch_parses_and_applies_or_is_a_forklift_error(text, strip, applier):
    try:
        patch = parse_patch("p.patch", text, strip)
    except ForkliftError as exc:
        assert_one_line(exc)
        return
    assert (patch.name, patch.text, patch.strip) == ("p.patch", text, strip)
    assert bool(patch.files) == (text != "")
    for fp in patch.files:
        assert_file_holds(fp)
    try:
        result = apply_patch(TREE.get, patch, applier)
    except ForkliftError as exc:
        assert_one_line(exc)
        return
    assert_result_holds(result, patch, applier)


@st.composite
def faithful_patch(draw) -> tuple[str, list[tuple[int, int, list[tuple[str, str]]]]]:
    """One stanza whose hunk headers agree with their bodies, and what it says: (start, old, new, lines)."""
    said = []
    text = "--- a/m.py\n+++ b/m.py\n"
    start = 1
    for _ in range(draw(st.integers(1, 3))):
        lines = draw(st.lists(st.tuples(st.sampled_from("+- "), st.sampled_from(["x", "y", ""])), max_size=6))
        lines.append((draw(st.sampled_from("+-")), "z"))  # a hunk changes something
        old = sum(kind != "+" for kind, _ in lines)
        new = sum(kind != "-" for kind, _ in lines)
        text += f"@@ -{start},{old} +{start},{new} @@\n" + "".join(f"{kind}{body}\n" for kind, body in lines)
        said.append((start, old, new, lines))
        start += old + 1
    return text, said


@given(written=faithful_patch())
def test_a_patch_whose_headers_agree_parses_to_the_hunks_written(written):
    text, said = written
    (fp,) = parse_patch("p.patch", text).files
    assert (fp.old_path, fp.new_path) == ("m.py", "m.py")
    assert len(fp.hunks) == len(said)
    for h, (start, old, new, lines) in zip(fp.hunks, said, strict=True):
        assert (h.old_start, len(h.old), h.new_start, len(h.new)) == (start, old, start, new)
        assert h.removed == tuple(f"{body}\n".encode() for kind, body in lines if kind == "-")
        assert h.added == tuple(f"{body}\n".encode() for kind, body in lines if kind == "+")
        assert_hunk_holds(h)


SERIES_LINES = st.one_of(
    st.sampled_from(
        [
            "one.patch",
            "two.patch -p0",
            "x -p10",
            "x -R",
            "# comment",
            "a/b.patch",
            "..",
            "one.patch",
            "# forklift: skip three.patch -- not yet",
            "# forklift: skip",
            "#forklift: skip a/c.patch -- why # really",
            "# retired: old.patch (upstream took it)",
        ]
    ),
    st.text(max_size=20),
)


@given(lines=st.lists(SERIES_LINES, max_size=12))
def test_any_series_file_parses_or_is_a_forklift_error(lines):
    text = "\n".join(lines)
    try:
        entries = parse_series_file(text, Path("series"))
        skipped = skip_entries(text, Path("series"))
    except ForkliftError as exc:
        assert_one_line(exc)
        return
    names = [name for name, _ in entries]
    assert len(set(names)) == len(names)
    assert all(name and not re.search(r"\s", name) and strip >= 0 for name, strip in entries)
    firsts = [next(i for i, raw in enumerate(text.splitlines()) if raw.split()[:1] == [name]) for name in names]
    assert firsts == sorted(firsts), "entries out of the file's order"
    assert [s.after for s in skipped] == sorted(s.after for s in skipped)
    assert all(s.name and s.reason.strip() and 0 <= s.after <= len(entries) for s in skipped)
    assert all(entry.strip() for entry in retired_entries(text))


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
        '"x\\ny" = 1',  # a quoted key holding a newline
        '[profiles."p\\rq"]',
    ]
)


def assert_model_holds(model: object, raw: object) -> None:
    """The validated model has exactly the keys the TOML gave, table by table."""
    if isinstance(raw, dict) and hasattr(model, "model_fields_set"):
        assert model.model_fields_set == set(raw)  # type: ignore[attr-defined]
        for key, value in raw.items():
            assert_model_holds(getattr(model, key), value)
    elif (
        isinstance(raw, dict)
        and isinstance(model, dict)
        and all(hasattr(v, "model_fields_set") for v in model.values())
    ):
        assert set(model) == set(raw)
        for key, value in raw.items():
            assert_model_holds(model[key], value)


def assert_config_holds(text: str) -> None:
    path = Path("forklift.toml")
    try:
        config = parse_config(text, path)
    except ForkliftError as exc:
        assert_one_line(exc)
        return
    assert isinstance(config, Config) and isinstance(config.data, ForkliftToml) and config.path == path
    raw = tomllib.loads(text)
    assert config.data.upstream.source == raw["upstream"]["source"]
    assert_model_holds(config.data, raw)


@given(lines=st.lists(st.one_of(TOML_LINES, st.text(max_size=20)), max_size=25))
@example(lines=['"x\\ny" = 1'])  # found by the fuzz profile
def test_any_config_text_loads_or_is_a_config_error(lines):
    assert_config_holds("\n".join(lines))


@given(raw=st.binary(max_size=200))
def test_any_config_bytes_decode_or_are_a_config_error(raw):
    try:
        text = decode_config(raw, Path("forklift.toml"))
    except ForkliftError as exc:
        assert_one_line(exc)
        return
    assert_config_holds(text)
