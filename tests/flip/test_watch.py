"""`forklift watch`: the newest release against the pin, on the real index (the example's vLLM pin) and on a
real git upstream's tags; the exit code a scheduler acts on, the flip report and the pull-request body."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from tests.cli import EXAMPLE
from tests.series.distro import MOD, commit_all, edit, forklift, write_files


@pytest.mark.network
def test_a_newer_vllm_on_the_index_is_flipped_onto_with_a_pull_request_body(tmp_path):
    dist = tmp_path / "dist"
    shutil.copytree(EXAMPLE, dist, ignore=shutil.ignore_patterns("receipts"))
    out = tmp_path / "watch"
    proc = forklift("-c", dist, "watch", "--out", out, "--json")
    result = json.loads(proc.stdout)
    assert Version(result["newest"]) >= Version("0.34.0") and result["pinned"] == "0.32.0"
    assert result["read"].endswith("/vllm/")  # the index pip's configuration names
    assert proc.returncode == result["exit"] and result["exit"] in (10, 11), proc.stderr
    body = (out / "pull-request.md").read_text()
    assert body.startswith(f"# Move the pin from 0.32.0 to {result['newest']}\n")
    assert f"forklift flip {result['newest']} --write" in body and "## Engine requirements" in body
    assert "- torch ==2.13.0 → " in body  # a companion whose change makes the compile caches cold
    assert (out / f"flip-{result['newest']}.md").read_text().startswith("# Flip vllm 0.32.0 sdist → vllm ")
    assert 'version = "0.32.0"' in (dist / "forklift.toml").read_text()  # a dry run


def _upstream(tmp_path):
    """A git upstream tagged v1.0 (pinned), v1.1, v1.10, v2.0rc1 and a non-version tag; a distribution on v1.0."""
    repo = tmp_path / "upstream"
    pinned = commit_all(repo, {"pkg/mod.py": MOD}, "v1.0", tag="v1.0")
    commit_all(repo, {"pkg/mod.py": MOD.replace("v30 = 30\n", "v30 = 'x'\n")}, "v1.1", tag="v1.1")
    commit_all(repo, {"pkg/mod.py": MOD.replace("v5 = 5\n", "v5 = 'five'\n")}, "v1.10", tag="v1.10")
    commit_all(repo, {"pkg/mod.py": MOD}, "v2.0rc1", tag="v2.0rc1")  # a pre-release: not watched
    subprocess.run(["git", "-C", str(repo), "tag", "nightly"], check=True)
    dist = tmp_path / "dist"
    write_files(dist / "patches", {"a.patch": edit("pkg/mod.py", 20, "x")})
    (dist / "patches" / "series").write_text("a.patch\n")
    toml = (
        f'[engine]\nkind = "generic"\n[upstream]\nsource = "git"\nurl = "{repo}"\ntag = "v1.0"\ncommit = "{pinned}"\n'
    )
    (dist / "forklift.toml").write_text(toml + '[series]\npatches_md = ""\n')
    return dist


def watch(dist, tmp_path):
    return forklift("-c", dist, "watch", "--out", tmp_path / "out", "--receipts", tmp_path / "r")


def test_the_newest_version_tag_of_a_git_upstream_and_the_exit_codes(tmp_path):
    dist = _upstream(tmp_path)
    proc = watch(dist, tmp_path)
    assert proc.returncode == 10, proc.stdout + proc.stderr  # v1.10 (not v1.1: versions, not strings)
    assert "pinned v1.0; newest v1.10" in proc.stdout and (tmp_path / "out" / "flip-v1.10.md").is_file()
    write_files(dist / "patches", {"a.patch": edit("pkg/mod.py", 5, "v5 = 50")})  # v1.10 rewrote line 5
    proc = watch(dist, tmp_path)
    assert proc.returncode == 11, proc.stdout + proc.stderr
    assert (
        "**Blocked:** 1 patch(es) do not apply as they are: `a.patch`"
        in (tmp_path / "out" / "pull-request.md").read_text()
    )
    toml = dist / "forklift.toml"
    head = subprocess.run(
        ["git", "-C", str(tmp_path / "upstream"), "rev-parse", "v1.10"], capture_output=True, text=True
    )
    text = toml.read_text().replace('tag = "v1.0"', 'tag = "v1.10"')
    toml.write_text(text.split("commit = ")[0] + f'commit = "{head.stdout.strip()}"\n[series]\npatches_md = ""\n')
    proc = watch(dist, tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("the pin is the newest release: nothing to do")


def test_an_upstream_that_does_not_answer_and_a_path_pin_are_one_line(tmp_path):
    dist = _upstream(tmp_path)
    toml = dist / "forklift.toml"
    toml.write_text(toml.read_text().replace(f'url = "{tmp_path / "upstream"}"', f'url = "{tmp_path / "gone"}"'))
    proc = watch(dist, tmp_path)
    assert proc.returncode == 75 and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith(f"error: cannot reach the git repository {tmp_path / 'gone'}")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text(MOD)
    assert forklift("init", "--path", "src", cwd=tmp_path).returncode == 0
    proc = forklift("watch", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip().endswith("a local pin has no releases to watch")


def test_the_ci_templates_watch_job_says_moves_and_its_pull_request_step_opens_one(tmp_path):
    """The workflow's watch steps as GitHub runs them, on a distribution in git with a local bare origin.
    `gh` is a stand-in that records its arguments: no GitHub here (the only fake in this test)."""
    from tests.flip.test_ci_template import EXAMPLES, INSTALL, job_steps

    dist = _upstream(tmp_path)
    shutil.copytree(EXAMPLES, dist / "ci")
    (dist / ".gitignore").write_text("forklift-ci/\n")
    origin = tmp_path / "origin.git"
    git = ["git", "-C", str(dist), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    for step in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["commit", "-qm", "dist"],
        ["remote", "add", "origin", str(origin)],
    ):
        subprocess.run([*git, *step], check=True)
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "gh").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path / "gh-args"}\n')
    (shim / "gh").chmod(0o755)
    outputs = tmp_path / "outputs"
    env = {
        **os.environ,
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(outputs),
        "PATH": f"{shim}:{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    steps = job_steps("watch")
    assert steps == [INSTALL, "bash ci/forklift-ci.sh watch"]
    assert subprocess.run(["bash", "-c", steps[1]], cwd=dist, env=env).returncode == 0
    said = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert said == {"verdict": "moves", "newest": "v1.10"}
    assert (tmp_path / "summary.md").read_text().startswith("# Move the pin from v1.0 to v1.10")
    workflow = (EXAMPLES / "forklift.yml").read_text()
    assert "FORKLIFT_NEWEST: ${{ steps.watch.outputs.newest }}" in workflow
    opened = subprocess.run(
        ["bash", "ci/forklift-ci.sh", "pull-request"], cwd=dist, env={**env, "FORKLIFT_NEWEST": "v1.10"}
    )
    assert opened.returncode == 0
    moved = subprocess.run(
        ["git", "-C", str(origin), "show", "forklift/pin-v1.10:forklift.toml"], capture_output=True, text=True
    )
    assert 'tag = "v1.10"' in moved.stdout
    args = (tmp_path / "gh-args").read_text().splitlines()
    assert args[:4] == ["pr", "create", "--title", "Move the pin to v1.10"]
    assert args[args.index("--body-file") + 1] == "forklift-ci/watch/pull-request.md"
