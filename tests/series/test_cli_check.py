"""`forklift check` end to end on the example distribution and the real vLLM 0.32.0 sdist from PyPI."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from forklift.receipts import read_receipts
from tests.cli import EXAMPLE, forklift

pytestmark = pytest.mark.network


@pytest.fixture()
def example(tmp_path, vllm_032_tree) -> Path:
    """A private copy of the example distribution (the real sdist is already in the cache)."""
    copy = tmp_path / "dist"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("receipts"))
    return copy


def test_example_passes_with_table_overlay_hash_and_receipt(example):
    proc = forklift("-c", str(example), "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in (p.name for p in (example / "patches").glob("*.patch")):
        assert name[:30] in proc.stdout
    assert "overlay hash:" in proc.stdout and "sha256:" in proc.stdout
    [(_path, receipt)] = read_receipts([example / "receipts"])
    assert receipt.kind == "check" and receipt.status == "ok"
    assert receipt.pin["version"] == "0.32.0"
    assert receipt.overlay_hash.startswith("sha256:")
    assert [p["status"] for p in receipt.body["pass1"]] == ["exact", "exact", "exact"]
    assert [p["name"] for p in receipt.body["pass2"]] == ["0001-scheduler-no-drafts-for-structured-output.patch"]


def test_json_and_junit(example, tmp_path):
    junit = tmp_path / "check.xml"
    proc = forklift("-c", str(example), "check", "--json", "--junit", str(junit))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is True and report["findings"] == []
    assert {f["path"] for f in report["touched"]} == {
        "vllm/envs.py",
        "vllm/v1/core/sched/scheduler.py",
        "vllm/v1/engine/core.py",
    }
    suite = ET.parse(junit).getroot()
    assert suite.get("failures") == "0" and int(suite.get("tests")) >= 4


def _rewrite(example: Path, name: str, old: str, new: str) -> None:
    path = example / "patches" / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_patch_needing_fuzz_fails_with_exit_1(example):
    # A context line that upstream 0.32.0 does not have: git apply and patch --fuzz 0 both refuse it.
    _rewrite(
        example, "0003-engine-log-kv-cache-blocks.patch", "                 elapsed,\n", "                 elapsed_s,\n"
    )
    proc = forklift("-c", str(example), "check")
    assert proc.returncode == 1
    assert "FAIL pass1: 0003-engine-log-kv-cache-blocks.patch: fuzz: vllm/v1/engine/core.py hunk #1" in proc.stdout
    assert "needs fuzz" in proc.stdout


def test_an_offset_is_reported_and_passes(example):
    _rewrite(example, "0001-scheduler-no-drafts-for-structured-output.patch", "@@ -2557,", "@@ -2550,")
    proc = forklift("-c", str(example), "check", "--json")
    assert proc.returncode == 0, proc.stdout
    hunk = json.loads(proc.stdout)["pass1"][0]["hunks"][0]
    assert (hunk["status"], hunk["offset"]) == ("offset", 7)


def test_a_patch_upstream_already_carries_fails_as_already_applied(example, vllm_032_tree):
    # Reverse a real upstream line: the "patch" turns 0.32.0's text into itself minus nothing new.
    target = "vllm/v1/engine/core.py"
    lines = (vllm_032_tree.path / target).read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "init engine (profile, create kv cache" in line)
    ctx_before, changed, ctx_after = lines[at - 3 : at], lines[at], lines[at + 1 : at + 4]
    body = "".join(" " + x for x in ctx_before) + "-" + changed.replace("init engine", "init  engine") + "+" + changed
    body += "".join(" " + x for x in ctx_after)
    patch = f"Description: already upstream\n---\n--- a/{target}\n+++ b/{target}\n@@ -{at - 2},7 +{at - 2},7 @@\n{body}"
    (example / "patches" / "0004-already-upstream.patch").write_text(patch)
    with open(example / "patches" / "series", "a") as fh:
        fh.write("0004-already-upstream.patch\n")
    proc = forklift("-c", str(example), "check")
    assert proc.returncode == 1
    assert "0004-already-upstream.patch: already-applied" in proc.stdout


def test_stale_patches_md_fails_and_patches_md_fixes_it(example):
    md = example / "PATCHES.md"
    md.write_text(md.read_text().replace("Clear speculative drafts", "Something else"))
    proc = forklift("-c", str(example), "check")
    assert proc.returncode == 1 and "patches-md: PATCHES.md: differs from a fresh render" in proc.stdout
    assert forklift("-c", str(example), "patches-md").returncode == 0
    assert forklift("-c", str(example), "check").returncode == 0


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda d: (d / "patches" / "series").write_text("# nothing\n"), "the series is empty"),
        (
            lambda d: (
                (d / "patches" / "extra.patch").write_text("x")
                and (d / "forklift.toml").write_text(
                    (d / "forklift.toml").read_text().replace("[series]\n", '[series]\nunlisted = "error"\n')
                )
            ),
            "extra.patch: patch file is not listed",
        ),
        (
            lambda d: (d / "forklift.toml").write_text((d / "forklift.toml").read_text() + "\n[colour]\nx = 1\n"),
            "colour: unknown key",
        ),
        (lambda d: (d / "forklift.toml").write_text("[upstream\n"), "invalid TOML"),
        (
            lambda d: (d / "forklift.toml").write_text((d / "forklift.toml").read_text().replace("d2c957", "000000")),
            "sha256",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_culprit(example, mutate, message):
    mutate(example)
    proc = forklift("-c", str(example), "check")
    assert proc.returncode in (1, 2)
    assert message in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert not (example / "receipts").exists()
