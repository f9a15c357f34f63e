"""`forklift lint` and `[series] lint = true` in `check`: DEP-3 completeness, Forwarded states, leaks.

The example series lints clean; each rule fires on a patch written to break it, a `Lint-Ignore:` waives it,
and a secret is never printed whole."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from forklift.series.lint import MAX_LINE, lint_patch
from forklift.series.model import parse_patch
from tests.cli import EXAMPLE, forklift

DIFF = "--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1,1 +1,2 @@\n a = 1\n+{line}\n"
GOOD = "Description: d\nAuthor: A <a@example.invalid>\nOrigin: vendor\nForwarded: no\n---\n"
GH_TOKEN = "ghp_" + "a1B2" * 9  # the shape of a GitHub token, made up
HF_TOKEN = "hf_" + "Xy9" * 11


def rules(header: str, line: str = "b = 2") -> list[str]:
    return [f.rule for f in lint_patch(parse_patch("p.patch", header + DIFF.format(line=line)))]


def test_dep3_completeness_and_the_forwarded_state():
    assert rules(GOOD) == []
    assert rules("Origin: vendor\nForwarded: no\n---\n") == ["dep3-description"]
    assert rules("Description: d\nForwarded: no\n---\n") == ["dep3-origin"]
    assert rules("Description: d\nAuthor: A\n---\n") == ["dep3-forwarded"]  # DEP-3 would read "yes"
    assert rules("Description: d\nOrigin: upstream, https://x/c/1\n---\n") == []  # upstream's own change
    assert rules("Description: d\nOrigin: vendor\nApplied-Upstream: 0.33.0\n---\n") == []
    for state in ("not-needed", "yes", "https://github.com/vllm-project/vllm/pull/1", "<id@lists.example.org>"):
        assert rules(GOOD.replace("Forwarded: no", f"Forwarded: {state}")) == [], state
    [finding] = lint_patch(parse_patch("p.patch", GOOD.replace("Forwarded: no", "Forwarded: not-yet") + DIFF))
    assert finding.message.startswith("Forwarded: 'not-yet' is not a DEP-3 state")
    # git format-patch: Subject and From stand for Description and Author
    mail = "From 0123 Mon Sep 17 00:00:00 2001\nFrom: A <a@example.invalid>\nSubject: [PATCH] fix\n\nbody\n---\n"
    assert rules(mail) == ["dep3-forwarded"]


def test_secrets_and_private_paths_an_added_line_brings():
    assert rules(GOOD, f'TOKEN = "{GH_TOKEN}"') == ["secret"]
    assert rules(GOOD, f"login({HF_TOKEN!r})") == ["secret"]
    assert rules(GOOD, "-----BEGIN OPENSSH PRIVATE KEY-----") == ["secret"]
    assert rules(GOOD, "api_key = 'q8Zr2LmP0vX4nB7kTy3w'") == ["secret"]
    assert rules(GOOD, 'api_key = "EMPTY"') == []  # vLLM's own placeholder: short
    assert rules(GOOD, 'token = os.environ["HF_TOKEN"]') == []
    assert rules(GOOD, 'MODEL = "/home/alice/models/qwen"') == ["private-path"]
    assert rules(GOOD, r'CACHE = "C:\\Users\\bob\\cache"') == ["private-path"]
    assert rules(GOOD, 'path = "/home/$USER/.cache"') == []
    [finding] = lint_patch(parse_patch("p.patch", GOOD + DIFF.format(line=f"t = '{GH_TOKEN}'")))
    assert GH_TOKEN not in finding.message and finding.message.startswith("vllm/x.py hunk #1 adds a GitHub token (ghp_")
    # what upstream already has (context and removed lines) is not the patch's
    upstream_has = GOOD + f"--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,1 @@\n k = '{GH_TOKEN}'\n-b = 1\n"
    assert lint_patch(parse_patch("p.patch", upstream_has)) == []


def test_lint_ignore_waives_a_rule_and_a_huge_line_is_read_only_so_far():
    assert rules(GOOD.replace("---", "Lint-Ignore: private-path, secret\n---"), f"x = '/home/alice/{GH_TOKEN}'") == []
    far = "x" * MAX_LINE + GH_TOKEN  # past the bound: a minified blob is not scanned to its end
    assert rules(GOOD, far) == []


@pytest.fixture()
def example(tmp_path: Path) -> Path:
    copy = tmp_path / "dist"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("receipts"))
    return copy


def test_the_example_series_lints_clean_and_a_bad_patch_fails_with_exit_1(example: Path):
    proc = forklift("-c", example, "lint")
    assert proc.returncode == 0 and proc.stdout.strip() == "OK — 3 patch(es), 0 finding(s)", proc.stdout + proc.stderr
    patch = example / "patches" / "0001-scheduler-no-drafts-for-structured-output.patch"
    patch.write_text(patch.read_text().replace("Forwarded: no", "Forwarded: not-yet"))
    proc = forklift("-c", example, "lint", "--json")
    assert proc.returncode == 1
    [finding] = json.loads(proc.stdout)["findings"]
    assert (finding["patch"], finding["rule"]) == (patch.name, "dep3-forwarded")


@pytest.mark.network
def test_check_fails_on_lint_findings_only_when_the_series_asks(example: Path):
    patch = example / "patches" / "0001-scheduler-no-drafts-for-structured-output.patch"
    patch.write_text(patch.read_text().replace("Forwarded: no\n", ""))
    assert forklift("-c", example, "patches-md").returncode == 0  # PATCHES.md shows the Forwarded column
    assert forklift("-c", example, "check").returncode == 0  # off by default
    toml = example / "forklift.toml"
    toml.write_text(toml.read_text().replace('dir = "patches"\n', 'dir = "patches"\nlint = true\n'))
    proc = forklift("-c", example, "check")
    assert proc.returncode == 1
    assert f"FAIL lint: {patch.name}: dep3-forwarded: no Forwarded: state" in proc.stdout
