"""`forklift range-diff OLD NEW`: two versions of the series, patch by patch, as git range-diff shows them.

The example series (real vLLM 0.32.0 sdist) re-cut onto 0.33.0 by `flip --write` is compared with git range-diff
over the fork branches `forklift import` and `forklift rebase` make of the same series: the same output, commit
ids aside."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.cli import EXAMPLE, forklift

pytestmark = pytest.mark.network  # the real sdists (cached after the first run)

THIRD = "0003-engine-log-kv-cache-blocks.patch"


def _ids_masked(text: str) -> str:
    return re.sub(r"\b[0-9a-f]{7,40}\b", "<id>", text)


def _git(cwd, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def test_the_example_recut_onto_0_33_reads_as_git_range_diff_of_the_rebased_fork(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(EXAMPLE, old, ignore=shutil.ignore_patterns("receipts"))
    shutil.copytree(old, new)
    assert forklift("-c", new, "flip", "0.33.0", "--write", "--receipts", tmp_path / "r").returncode == 0
    proc = forklift("-c", new, "range-diff", old, new)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("3 patches: 3 unchanged (")
    # the same series as fork branches: imported on 0.32.0, then rebased onto 0.33.0 by git
    fork = tmp_path / "fork"
    assert forklift("-c", old, "import", "--branch", "work", "--repo", fork).returncode == 0
    _git(fork, "branch", "before", "work")
    assert forklift("-c", old, "rebase", "0.33.0", "--repo", fork, "--branch", "work").returncode == 0
    theirs = _git(fork, "range-diff", "--no-color", "v0.32.0..before", "v0.33.0..work")
    assert _ids_masked(proc.stdout).startswith(_ids_masked(theirs)), (proc.stdout, theirs)
    assert len(theirs.splitlines()) == 3


def test_an_edited_a_dropped_and_a_new_patch_show_as_git_shows_them(tmp_path):
    """Revisions of the distribution's own repository: its series before and after an edit."""
    dist = tmp_path / "dist"
    shutil.copytree(EXAMPLE, dist, ignore=shutil.ignore_patterns("receipts"))
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "the series")
    third = dist / "patches" / THIRD
    third.write_text(third.read_text().replace("block count and block size", "block count"))
    series = dist / "patches" / "series"
    series.write_text(series.read_text().replace("0002-envs-register-log-kv-cache-blocks.patch\n", ""))
    _git(tmp_path, "commit", "-qam", "edit the series")
    proc = forklift("-c", dist, "range-diff", "HEAD~1", "HEAD")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert re.fullmatch(r"1:  \w+ = 1:  \w+ Clear speculative drafts for requests with structured outputs", lines[0])
    assert re.fullmatch(r"2:  \w+ < -:  -+ Register the VLLM_LOG_KV_CACHE_BLOCKS knob", lines[1])
    assert re.fullmatch(r"3:  \w+ ! 2:  \w+ Log the KV cache block count and block size as a boot fact", lines[2])
    assert "    -    Log the KV cache block count and block size as a boot fact" in lines
    assert "    +    Log the KV cache block count as a boot fact" in lines
    assert lines[-1].startswith("3 patches: 1 unchanged, 1 changed, 1 only in OLD (HEAD~1 (vllm 0.32.0 sdist)")
    # a series folder reads on this distribution's pin; the same comparison the other way
    back = forklift("-c", dist, "range-diff", dist / "patches", "HEAD~1")
    assert "1 only in NEW" in back.stdout.splitlines()[-1], back.stdout + back.stderr


def test_range_diff_bad_input_is_one_line(tmp_path):
    dist = tmp_path / "dist"
    shutil.copytree(EXAMPLE, dist, ignore=shutil.ignore_patterns("receipts"))
    (tmp_path / "empty").mkdir()
    cases = {
        ("nope", str(dist)): f"error: nope: no such folder, and {dist} is not a git repository to read a revision of",
        (str(tmp_path / "empty"), str(dist)): (
            f"error: {tmp_path / 'empty'}: neither a distribution (forklift.toml) nor a series folder (a series file)"
        ),
    }
    for (old, new), expected in cases.items():
        proc = forklift("-c", dist, "range-diff", old, new)
        assert proc.returncode == 2 and proc.stderr.strip() == expected, proc.stderr
    _git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "README").write_text("x\n")
    _git(tmp_path, "add", "README")
    _git(tmp_path, "commit", "-qm", "before the distribution")
    proc = forklift("-c", dist, "range-diff", "nope", str(dist))
    assert proc.returncode == 2 and proc.stderr.strip() == f"error: nope: no such folder, nor a revision of {dist}"
    proc = forklift("-c", dist, "range-diff", "HEAD", str(dist))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: HEAD: dist/forklift.toml is not in that revision of {dist}"
