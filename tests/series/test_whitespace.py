"""check's whitespace rules held to `git apply --check --whitespace=error` (git's defaults: blank-at-eol,
space-before-tab, blank-at-eof) on real patches and files."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forklift.fsio import tree_reader
from forklift.series.apply import apply_series
from forklift.series.check import _line_problem, _suspect, whitespace_findings
from forklift.series.model import parse_patch
from forklift.series.render import file_diff

TEXT = "".join(f"line {i}\n" for i in range(1, 9))

CASES = {  # name: (before, after) of f.txt; None: the file is new
    "blank lines added at the end": (TEXT, TEXT + "\n\n"),
    "one blank line added at the end": (TEXT, TEXT + "\n"),
    "blank lines added in the middle": (TEXT, TEXT.replace("line 4\n", "line 4\n\n\n")),
    "blank line added before the last line": (TEXT, TEXT.replace("line 8\n", "\nline 8\n")),
    "blank line added before blank context at the end": (TEXT + "\n", TEXT + "\n\n"),
    "last line replaced by a blank one": (TEXT, TEXT.replace("line 8\n", "\n")),
    "a new file ending in a blank line": (None, "new\n\n"),
    "a new file of text": (None, "new\n"),
    "blank added then a line at the end": (TEXT, TEXT + "\nend\n"),
    "trailing space": (TEXT, TEXT.replace("line 3\n", "line 3 \n")),
    "a CRLF line": (TEXT, TEXT.replace("line 3\n", "line 3\r\n")),
    "a blank CRLF line at the end": (TEXT, TEXT + "\r\n"),
    "space before tab": (TEXT, TEXT.replace("line 3\n", " \tline 3\n")),
    "a far edit and blank lines at the end": (TEXT * 4, (TEXT * 4).replace("line 2\n", "line two\n", 1) + "\n"),
}


def _git_counts(root: Path, patch: str) -> set[str]:
    proc = subprocess.run(
        ["git", "apply", "--check", "--whitespace=error-all", "-"],
        cwd=root,
        input=patch,
        capture_output=True,
        text=True,
        env={**os.environ, "LC_ALL": "C", "GIT_CEILING_DIRECTORIES": str(root.parent)},
    )
    said = proc.stderr
    found = {"trailing whitespace" if "trailing whitespace" in said else ""}
    found |= {"space before tab in indent" if "space before tab in indent" in said else ""}
    found |= {"new blank line at end of file" if "new blank line at EOF" in said else ""}
    return found - {""}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_each_rule_agrees_with_git_apply_whitespace_error(tmp_path, case):
    before, after = CASES[case]
    root = tmp_path / "tree"
    root.mkdir()
    if before is not None:
        (root / "f.txt").write_text(before)
    text = file_diff("f.txt", None if before is None else before.encode(), after.encode())
    patch = parse_patch("ws.patch", text)
    results, _ = apply_series(tree_reader(root), [patch], "git-apply")
    assert results[0].applies
    ours = {f.message.split(": ", 1)[1].split(" in added line")[0] for f in whitespace_findings([patch], results)}
    assert ours == _git_counts(root, text), text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary().map(lambda raw: bytes(b" \t\r\nax"[b % 6] for b in raw)), max_size=6))
def test_the_quick_look_at_a_hunk_misses_no_problem_line(lines: list[bytes]) -> None:
    """Added lines are checked one by one only when the whole hunk looks suspect: never skip a real problem."""
    if any(_line_problem(line) for line in lines):
        assert _suspect(tuple(lines))
