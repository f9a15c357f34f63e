"""An output forklift cannot write is one line naming it, exit 2: a file where a folder must be, or /proc.

Each command is run for real through the CLI on a small distribution (flip: a local git pin with two tags).
"""

from __future__ import annotations

import pytest

from tests.report.test_report import bench
from tests.series.distro import MOD, commit_all, distribution, edit, forklift


@pytest.fixture
def dist(tmp_path):
    (tmp_path / "FILE").write_text("a file, not a folder\n")
    return distribution(tmp_path, {"pkg/mod.py": MOD}, {"a.patch": edit("pkg/mod.py", 5, "v5 = 50")})


def _one_line(proc, path) -> None:
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: {path}") and "cannot write here" in line and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args, culprit",
    [
        (["check", "--receipts", "{t}/FILE/r"], "{t}/FILE/r"),
        (["check", "--junit", "{t}/FILE/x.xml"], "{t}/FILE"),
        (["tree", "{t}/FILE/out"], "{t}/FILE"),
        (["tree", "/proc/x"], "/proc/x"),
    ],
    ids=["check-receipts", "check-junit", "tree-under-a-file", "tree-in-proc"],
)
def test_check_and_tree(dist, tmp_path, args, culprit):
    proc = forklift("-c", str(dist), *(a.format(t=tmp_path) for a in args))
    _one_line(proc, culprit.format(t=tmp_path))


def test_report_output_under_a_file(tmp_path):
    (tmp_path / "FILE").write_text("x")
    bench(tmp_path / "campaign", "0.32.0", "plain", seed=1)
    _one_line(forklift("report", str(tmp_path / "campaign"), "-o", str(tmp_path / "FILE" / "r.md")), tmp_path / "FILE")


def test_flip_report_under_a_file(tmp_path):
    repo = tmp_path / "upstream"
    commit_all(repo, {"pkg/mod.py": MOD}, "one", tag="v1")
    commit_all(repo, {"pkg/mod.py": "# moved\n" + MOD}, "two", tag="v2")
    (tmp_path / "FILE").write_text("x")
    dist = tmp_path / "dist"
    assert forklift("init", "--git", str(repo), "--tag", "v1", "--dir", str(dist)).returncode == 0
    (dist / "patches" / "a.patch").write_text(edit("pkg/mod.py", 5, "v5 = 50"))
    (dist / "patches" / "series").write_text("a.patch\n")
    proc = forklift("-c", str(dist), "flip", "v2", "--report", str(tmp_path / "FILE" / "f.md"))
    _one_line(proc, tmp_path / "FILE")
