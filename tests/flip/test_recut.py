"""flip's retire rule on real git trees: retire only what upstream took whole; a patch upstream took in part
is "partly upstream: re-cut", naming the hunks upstream has and quoting the lines it lacks.

The case of the report that asked for it: a one-hunk backport adding 7 lines, of which the new release
has 6; the 7th (the gate) is the point of the patch, and its Retires-When header says so.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from forklift.flip.report import FlipReport, FlipRow, render_markdown
from forklift.flip.triage import triage
from forklift.fsio import tree_reader
from forklift.series.model import parse_patch
from tests.series.distro import commit_all

BASE = "".join(f"def helper_{i}():\n    return {i}\n\n\n" for i in range(12))
BACKPORT = [
    "def gate(config):",
    "    if config.kind != 'cpu':",
    "        return False",
    "    if config.threads < 2:",
    "        return False",
    "    level = config.level",
    "    return level >= 3",
]


def _with(lines: list[str], at: str = "def helper_6():\n", text: str = BASE) -> str:
    return text.replace(at, "\n".join(lines) + "\n\n\n" + at)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _trees(tmp_path: Path, ours: str, upstream_new: str) -> tuple[Path, Path, str]:
    """A repository with the old release, our backport on a branch and the new release; each tree checked
    out, and the backport as `git format-patch` writes it (with a Retires-When trailer)."""
    repo = tmp_path / "repo"
    commit_all(repo, {"pkg/gate.py": BASE}, "old release", tag="v1")
    _git(repo, "checkout", "-qb", "backport")
    commit_all(
        repo, {"pkg/gate.py": ours}, "Backport the cpu gate\n\nRetires-When: upstream gates on config.threads too"
    )
    patch = _git(repo, "format-patch", "--stdout", "v1..backport")
    _git(repo, "checkout", "-q", "v1")
    commit_all(repo, {"pkg/gate.py": upstream_new}, "new release", tag="v2")
    trees = []
    for tag in ("v1", "v2"):
        out = tmp_path / tag
        out.mkdir()
        archive = subprocess.run(["git", "-C", str(repo), "archive", tag], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
        trees.append(out)
    return trees[0], trees[1], patch


def _flip(tmp_path: Path, ours: str, upstream_new: str):
    old, new, text = _trees(tmp_path, ours, upstream_new)
    patch = parse_patch("0001-backport-the-cpu-gate.patch", text)
    [verdict], _ = triage(tree_reader(old), tree_reader(new), [patch], "gnu-patch")
    row = FlipRow.of(verdict, patch.header.description, patch.header.get("retires-when"))
    report = FlipReport(old="v1", new="v2", new_pin={}, patches=[row], knobs_skipped="not a vLLM tree")
    return verdict, row, render_markdown(report)


def test_six_of_seven_added_lines_upstream_is_partly_upstream_not_a_retire_candidate(tmp_path):
    # upstream took the function but gates on something else, and moved it next to other code
    theirs = [line.replace("config.threads < 2", "config.cores < 2") for line in BACKPORT]
    upstream = _with(["# gates", *theirs], at="def helper_7():\n").replace("return 5\n", "return 55\n")
    verdict, row, markdown = _flip(tmp_path, _with(BACKPORT), upstream)
    assert verdict.verdict == "recut"
    assert verdict.retire is not None and (verdict.retire.present, verdict.retire.total) == (6, 7)
    assert verdict.retire.upstream_hunks == () and not verdict.retire.whole
    assert verdict.retire.differing == (("if config.threads < 2:", "if config.cores < 2:"),)
    assert row.verdict_text() == "partly upstream: re-cut (retires when: upstream gates on config.threads too)"
    assert "not upstream: `if config.threads < 2:`" in row.detail()
    assert "retire candidate" not in markdown
    assert "| partly upstream: re-cut (retires when: upstream gates on config.threads too) |" in markdown


def test_the_whole_change_upstream_and_edited_since_is_a_retire_candidate(tmp_path):
    upstream = _with(["# gates", *BACKPORT], at="def helper_7():\n").replace("return 5\n", "return 55\n")
    verdict, row, _ = _flip(tmp_path, _with(BACKPORT), upstream)
    assert verdict.verdict == "retire-candidate"
    assert verdict.retire is not None and verdict.retire.whole and verdict.retire.present == 7
    assert row.detail() == "7 of 7 added lines present upstream; every hunk's change is upstream"


def test_a_hunk_upstream_took_is_named_for_dropping_and_the_rest_quoted(tmp_path):
    ours = _with(BACKPORT).replace("    return 10\n", "    return 10  # clamp\n")
    theirs = [line.replace("level >= 3", "level >= 4") for line in BACKPORT]
    upstream = _with(["# gates", *theirs], at="def helper_7():\n").replace(
        "    return 10\n", "    return 10  # clamp\n"
    )
    verdict, row, markdown = _flip(tmp_path, ours, upstream.replace("return 5\n", "return 55\n"))
    assert verdict.verdict == "recut"
    assert verdict.retire is not None and verdict.retire.upstream_hunks == ("pkg/gate.py hunk #2",)
    assert "upstream has pkg/gate.py hunk #2: re-cut without them (drop them)" in row.detail()
    assert "not upstream: `return level >= 3`" in row.detail()
    assert [h.status for h in verdict.hunks] == ["fuzz", "already"]
    assert "partly upstream: re-cut" in markdown


def test_a_patch_mostly_missing_upstream_stays_a_conflict(tmp_path):
    upstream = BASE.replace("return 5\n", "return 55\n").replace("def helper_6", "def helper_six")
    verdict, _, _ = _flip(tmp_path, _with(BACKPORT), upstream)
    assert verdict.verdict == "conflict" and verdict.retire is None
