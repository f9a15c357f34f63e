"""The fork workflow page, run exactly as written: import, export, replay, bind, flip, rebase, export, check.

The test takes the first ```sh block of docs/commands/fork.md and runs it with
tests/test_docs.py's runner (one bash, `set -e`), `forklift` being this checkout's CLI, in a scratch
folder holding only a link to examples/. Every output line the README shows (the `#   ` lines) must be
printed, in order, by its command; commit ids the rebase makes depend on the clock, so ids and digests
are compared by shape (test_docs's rule).
"""

from __future__ import annotations

import shlex
import sys

import pytest

from tests.cli import REPO
from tests.test_docs import DOC_BLOCKS, Block, assert_steps_shown, run_sh

pytestmark = pytest.mark.network


def workflow() -> Block:
    """The first sh block of the fork workflow page."""
    return next(block for block in DOC_BLOCKS if block.lang == "sh" and block.page == "docs/commands/fork.md")


def test_the_fork_workflow_page_runs_as_written(tmp_path, vllm_032_tree, vllm_033_tree):
    block = workflow()
    script = "\n".join(command for command, _ in block.steps)
    assert "forklift -c dist rebase 0.33.0" in script and "git -C vllm-fork remote add origin" in script
    bin, work = tmp_path / "bin", tmp_path / "work"
    bin.mkdir()
    work.mkdir()
    (bin / "forklift").write_text(
        f'#!/bin/sh\nPYTHONPATH={shlex.quote(str(REPO))} exec {shlex.quote(sys.executable)} -m forklift "$@"\n'
    )
    (bin / "forklift").chmod(0o755)
    (work / "examples").symlink_to(REPO / "examples")
    done = run_sh(block, work, bin)
    assert_steps_shown(block, done.stdout)
    assert (work / "flip-0.33.0.md").read_text().startswith("# Flip vllm 0.32.0 sdist → vllm 0.33.0 sdist")
    assert 'version = "0.33.0"' in (work / "dist" / "forklift.toml").read_text()
