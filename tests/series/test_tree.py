"""`forklift tree OUT`: the patched tree written out atomically, byte for byte what `quilt push -a` builds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from forklift.series.model import load_series
from tests.series.distro import MOD, distribution, edit, forklift, tree_bytes

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vllm"


@pytest.mark.network
def test_example_vllm_tree_equals_quilt_push_a_on_the_real_sdist(tmp_path, vllm_032_tree):
    quilt_tree = tmp_path / "quilt"
    shutil.copytree(vllm_032_tree.path, quilt_tree, symlinks=True)
    shutil.copytree(EXAMPLE / "patches", quilt_tree / "patches")
    env = {**os.environ, "QUILT_PATCHES": "patches", "QUILTRC": "/dev/null"}
    subprocess.run(["quilt", "push", "-a", "--fuzz=0"], cwd=quilt_tree, env=env, check=True, capture_output=True)
    out = tmp_path / "out"
    proc = forklift("-c", str(EXAMPLE), "tree", str(out))
    assert proc.returncode == 0, proc.stderr
    ours = tree_bytes(out)
    record = json.loads(ours.pop("FORKLIFT-TREE.json"))
    theirs = tree_bytes(quilt_tree, ignore=(".pc", "patches"))
    assert ours.keys() == theirs.keys()
    assert [p for p in ours if ours[p] != theirs[p]] == []
    assert record["pin"]["version"] == "0.32.0" and record["overlay_hash"].startswith("sha256:")
    assert [p["name"] for p in record["patches"]] == [p.name for p in load_series(EXAMPLE / "patches").patches]


def _dist(tmp_path, patches=None):
    return distribution(tmp_path, {"pkg/mod.py": MOD}, patches or {"a.patch": edit("pkg/mod.py", 5, "v5 = 50")})


def test_refuses_a_non_empty_out_unless_forced_and_then_replaces_it_whole(tmp_path):
    dist = _dist(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    assert forklift("-c", str(dist), "tree", str(out)).returncode == 0  # an empty folder is fine
    (out / "stale.txt").write_text("from before")
    proc = forklift("-c", str(dist), "tree", str(out))
    assert proc.returncode == 2 and proc.stderr.strip() == f"error: {out}: not empty (pass --force to replace it)"
    assert forklift("-c", str(dist), "tree", str(out), "--force").returncode == 0
    assert not (out / "stale.txt").exists() and b"v5 = 50\n" in (out / "pkg/mod.py").read_bytes()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == []  # no staging left behind


def test_a_patch_that_does_not_apply_writes_nothing(tmp_path):
    dist = _dist(tmp_path, {"a.patch": edit("pkg/mod.py", 5, "v5 = 50", text=MOD.replace("v4 = 4", "v4 = 44"))})
    out = tmp_path / "out"
    proc = forklift("-c", str(dist), "tree", str(out))
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("error: a.patch: ") and "no tree written" in proc.stderr
    assert not out.exists()


def test_out_that_is_a_file_is_refused(tmp_path):
    dist = _dist(tmp_path)
    (tmp_path / "file").write_text("x")
    proc = forklift("-c", str(dist), "tree", str(tmp_path / "file"))
    assert proc.returncode == 2 and "exists and is not a folder" in proc.stderr


def test_record_names_pin_overlay_hash_and_digests(tmp_path):
    import hashlib

    dist = _dist(tmp_path)
    assert forklift("-c", str(dist), "tree", str(tmp_path / "out")).returncode == 0
    record = json.loads((tmp_path / "out" / "FORKLIFT-TREE.json").read_text())
    check = json.loads(forklift("-c", str(dist), "check", "--json").stdout)
    assert record["overlay_hash"] == check["overlay_hash"]
    assert record["pin"]["source"] == "path"
    patch = (dist / "patches" / "a.patch").read_bytes()
    assert record["patches"] == [{"name": "a.patch", "sha256": hashlib.sha256(patch).hexdigest()}]
