"""`[series] applier` holds for every command that applies the series, not for `check` alone.

Two patches on which GNU patch and git apply decide differently, each asked of the real tool on
a copy of the pinned tree: a -U0 hunk (GNU applies it, git refuses it without --unidiff-zero) and
a hunk ending at the end of the file its author had, on a release that grew lines after it (GNU
holds such a hunk to the end of the file and refuses it; git applies it). Under either applier
`check`, `tree`, `knobs` and `manifest` must all take that tool's verdict, and where it applies
the written tree must be the tool's bytes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from forklift.config.toml import tomllib
from tests.series.distro import distribution, forklift, tree_bytes

ENVS = """\
import os

environment_variables = {
    "VLLM_A": lambda: os.getenv("VLLM_A"),
    "VLLM_B": lambda: os.getenv("VLLM_B"),
    "VLLM_C": lambda: os.getenv("VLLM_C"),
}
"""
# the release the series is applied to: lines after the dict that the tail patch's author never saw
SHIPPED = ENVS + "\n\ndef knob(name):\n    return environment_variables[name]()\n"

PATCHES = {
    "u0": (  # GNU patch applies it; git apply refuses a hunk without context
        "VLLM_E",
        "Description: a -U0 hunk\n---\n--- a/vllm/envs.py\n+++ b/vllm/envs.py\n@@ -4 +4,2 @@\n"
        '-    "VLLM_A": lambda: os.getenv("VLLM_A"),\n'
        '+    "VLLM_A": lambda: os.getenv("VLLM_A"),\n'
        '+    "VLLM_E": lambda: os.getenv("VLLM_E"),\n',
    ),
    "tail": (  # git apply applies it; GNU patch wants its one trailing line at the end of the file
        "VLLM_D",
        "Description: a hunk written at the end of the file\n---\n--- a/vllm/envs.py\n+++ b/vllm/envs.py\n"
        "@@ -4,4 +4,5 @@\n"
        '     "VLLM_A": lambda: os.getenv("VLLM_A"),\n'
        '     "VLLM_B": lambda: os.getenv("VLLM_B"),\n'
        '     "VLLM_C": lambda: os.getenv("VLLM_C"),\n'
        '+    "VLLM_D": lambda: os.getenv("VLLM_D"),\n'
        " }\n",
    ),
}
TOOLS = {
    "gnu-patch": ["patch", "-p1", "--batch", "--forward", "--fuzz=0", "--no-backup-if-mismatch"],
    "git-apply": ["git", "apply"],
}


def _real_tool(tmp_path: Path, applier: str, text: str) -> dict[str, bytes] | None:
    """The tree the real tool makes of a copy of the pinned one; None where it refuses the patch."""
    copy = tmp_path / f"by-{applier}"
    shutil.copytree(tmp_path / "upstream", copy)
    proc = subprocess.run(TOOLS[applier], cwd=copy, input=text, capture_output=True, text=True, check=False)
    return tree_bytes(copy) if proc.returncode == 0 else None


@pytest.mark.parametrize("applier", ["gnu-patch", "git-apply"])
@pytest.mark.parametrize("case", ["u0", "tail"])
def test_check_tree_knobs_and_manifest_all_follow_the_configured_applier(tmp_path, case, applier):
    knob, text = PATCHES[case]
    dist = distribution(
        tmp_path, {"vllm/envs.py": SHIPPED}, {"0001-p.patch": text}, series_keys=f'applier = "{applier}"'
    )
    expected = _real_tool(tmp_path, applier, text)
    other = "git-apply" if applier == "gnu-patch" else "gnu-patch"
    assert (expected is None) != (_real_tool(tmp_path, other, text) is None), "the tools must disagree here"

    check = forklift("-c", str(dist), "check", "--json", "--receipts", str(tmp_path / "receipts"))
    out = tmp_path / "out"
    tree = forklift("-c", str(dist), "tree", str(out))
    knobs = forklift("-c", str(dist), "knobs", "--json")
    manifest = forklift("-c", str(dist), "manifest", "--write")
    [row] = json.loads(check.stdout)["pass1"]
    assert knobs.returncode == 0, knobs.stderr
    report = json.loads(knobs.stdout)
    if expected is None:
        refused = row["status"]  # git: fails; GNU: fuzz (it would take the tail hunk only with fuzz 2)
        assert check.returncode == 1 and refused in ("fails", "fuzz"), check.stdout
        assert tree.returncode == 1, tree.stderr
        assert (
            tree.stderr.strip()
            == f"error: 0001-p.patch: {refused} on the pristine tree: no tree written (run `forklift check`)"
        )
        assert not out.exists()
        assert report["not_applied"] == ["0001-p.patch"] and report["added"] == []
        assert manifest.returncode == 1
        assert manifest.stderr.startswith(f"error: 0001-p.patch: {refused} on the pristine tree"), manifest.stderr
        return
    assert check.returncode == 0 and row["status"] == "exact", check.stdout + check.stderr
    assert tree.returncode == 0, tree.stderr
    written = tree_bytes(out)
    record = json.loads(written.pop("FORKLIFT-TREE.json"))
    assert written == expected  # byte for byte what the configured tool makes
    assert record["changed"] == ["vllm/envs.py"]
    assert report["not_applied"] == [] and report["added"] == [knob]
    assert manifest.returncode == 0, manifest.stderr
    assert tomllib.loads((dist / "patches" / "MANIFEST.toml").read_text())["files"] == ["vllm/envs.py"]
