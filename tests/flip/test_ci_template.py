"""examples/ci: the GitHub Actions workflow's own `run:` steps, executed here as GitHub would (cwd the
distribution, GITHUB_STEP_SUMMARY a file), on a distribution pinned to a real local git upstream."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.flip.test_git_ref import _distribution

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ci"
INSTALL = 'python -m pip install "$FORKLIFT"'  # forklift is installed already: this test runs in its environment


def job_steps(job: str) -> list[str]:
    """The `run:` lines of one job of the workflow, in order (each is one line in this template)."""
    text = (EXAMPLES / "forklift.yml").read_text()
    block = re.search(rf"^  {job}:\n((?:    .*\n|\n)*)", text, re.M)
    assert block, f"no job {job} in forklift.yml"
    return re.findall(r"^\s+- run: (.+)$", block.group(1), re.M)


def run_job(job: str, dist: Path, tmp_path: Path, extra: dict[str, str] | None = None) -> tuple[list[int], Path]:
    (dist / "ci").mkdir(exist_ok=True)
    shutil.copy(EXAMPLES / "forklift-ci.sh", dist / "ci" / "forklift-ci.sh")
    summary = tmp_path / f"{job}-summary.md"
    env = {
        **os.environ,
        "GITHUB_STEP_SUMMARY": str(summary),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        **(extra or {}),
    }
    steps = job_steps(job)
    assert steps[0] == INSTALL
    codes = [subprocess.run(["bash", "-c", step], cwd=dist, env=env).returncode for step in steps[1:]]
    return codes, summary


@pytest.fixture
def dist(tmp_path):
    return _distribution(tmp_path)


def test_check_job_writes_junit_and_a_summary(dist, tmp_path):
    folder, _ = dist
    codes, summary = run_job("check", folder, tmp_path)
    assert codes == [0]
    suite = ET.parse(folder / "forklift-ci" / "check.xml").getroot()
    assert suite.get("failures") == "0" and {c.get("name") for c in suite} >= {"a.patch", "b.patch"}
    text = summary.read_text()
    assert ": OK" in text.splitlines()[0]
    assert "| 1 | a.patch | exact | - | +1 |" in text and "| 2 | b.patch | exact | - | +1 |" in text


def test_upstream_main_job_fails_naming_the_patch_main_breaks(dist, tmp_path):
    folder, head = dist
    pinned = (folder / "forklift.toml").read_text()
    codes, summary = run_job("upstream-main", folder, tmp_path)
    assert codes == [1]  # the nightly goes red before the release does
    text = summary.read_text()
    assert f"main @ {head[:12]}" in text and "a.patch" in text
    assert (folder / "forklift.toml").read_text() == pinned


def test_summary_is_appended_not_replaced(dist, tmp_path):
    folder, _ = dist
    summary = tmp_path / "check-summary.md"
    summary.write_text("earlier step's summary\n")
    codes, _ = run_job("check", folder, tmp_path)
    assert codes == [0] and summary.read_text().startswith("earlier step's summary\n### forklift check")


def test_unwritable_summary_is_one_line(dist, tmp_path):
    folder, _ = dist
    proc = subprocess.run(
        [sys.executable, "-m", "forklift", "check", "--summary", str(tmp_path / "missing" / "s.md")],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: {tmp_path / 'missing' / 's.md'}: cannot append: No such file or directory"
