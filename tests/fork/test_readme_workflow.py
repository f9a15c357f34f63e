"""The README's fork workflow, run exactly as written: import, export, replay, bind, flip, rebase, export, check.

The test reads the first ```sh block of the README's "The fork workflow" section, runs its lines in one
bash (`forklift` is this checkout's CLI) in a scratch folder holding only a link to examples/, and holds
every output line the README shows (the `#   ` lines) to what the commands printed; commit ids the
rebase makes depend on the clock, so any 12-hex id stands for any other there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.network


def workflow() -> tuple[str, list[str]]:
    """(the commands as a script, the output lines the README shows)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## The fork workflow") :]
    block = section[section.index("```sh\n") + 6 : section.index("\n```", section.index("```sh\n"))]
    shown = [line[4:].strip() for line in block.splitlines() if line.startswith("#   ")]
    return block + "\n", shown


def test_the_readme_fork_workflow_runs_as_written(tmp_path, vllm_032_tree, vllm_033_tree):
    script, shown = workflow()
    assert "forklift -c dist rebase 0.33.0" in script and "git -C vllm-fork remote add origin" in script
    (tmp_path / "examples").symlink_to(REPO / "examples")
    forklift = f'forklift() {{ "{sys.executable}" -c "from forklift.cli import main; main()" "$@"; }}\n'
    proc = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", forklift + script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    printed = proc.stdout.splitlines()
    for line in shown:
        pattern = re.compile(re.sub(r"[0-9a-f]{12}", "[0-9a-f]{12}", re.escape(line)))
        assert any(pattern.fullmatch(p.strip()) for p in printed), f"README shows {line!r}; printed:\n{proc.stdout}"
    assert (tmp_path / "flip-0.33.0.md").read_text().startswith("# Flip vllm 0.32.0 sdist → vllm 0.33.0 sdist")
    assert 'version = "0.33.0"' in (tmp_path / "dist" / "forklift.toml").read_text()
