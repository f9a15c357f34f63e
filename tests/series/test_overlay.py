"""File overlays: whole files copied over the tree after the series, counted and shown like the series' work."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from forklift.errors import ForkliftError
from forklift.series.files import read_overlay, upstream_drift
from tests.series.distro import MOD, distribution, edit, forklift, tree_bytes, write_files

NEW_MODULE = "def kvarn():\n    return 1\n"
REPLACED = MOD.replace("v3 = 3\n", "v3 = 33\n")


def _dist(tmp_path, overlay: dict[str, str], **kw):
    dist = distribution(
        tmp_path,
        {"pkg/mod.py": MOD, "pkg/other.py": MOD},
        {"a.patch": edit("pkg/mod.py", 20, "v20 = 200")},
        extra_toml='[overlay]\ndir = "overlay"\n',
        **kw,
    )
    write_files(dist / "overlay", overlay)
    return dist


def test_overlay_files_have_rows_count_in_the_hash_and_touched_files(tmp_path):
    dist = _dist(tmp_path, {"pkg/kvarn.py": NEW_MODULE, "pkg/other.py": REPLACED})
    report = json.loads(forklift("-c", str(dist), "check", "--json", "--junit", str(tmp_path / "j.xml")).stdout)
    assert report["ok"], report["findings"]
    rows = {row["path"]: (row["status"], row["added"], row["removed"]) for row in report["overlay_files"]}
    assert rows == {"pkg/kvarn.py": ("new", 2, 0), "pkg/other.py": ("replaces", 1, 1)}
    assert {f["path"] for f in report["touched"]} == {"pkg/mod.py", "pkg/kvarn.py", "pkg/other.py"}
    (dist / "overlay" / "pkg" / "kvarn.py").write_text(NEW_MODULE + "# changed\n")
    again = json.loads(forklift("-c", str(dist), "check", "--json").stdout)
    assert again["overlay_hash"] != report["overlay_hash"]  # the overlay's bytes are bound by the hash
    cases = {(c.get("classname"), c.get("name")) for c in ET.parse(tmp_path / "j.xml").getroot()}
    assert ("forklift.overlay", "pkg/kvarn.py") in cases and ("forklift.overlay", "pkg/other.py") in cases
    table = forklift("-c", str(dist), "check").stdout
    assert "overlay: pkg/kvarn.py" in table and "replaces" in table


def test_overlay_lands_after_the_series_like_rsync_after_quilt(tmp_path):
    """The user's recipe today: quilt push -a, then rsync the overlay folder in. `forklift tree` must match."""
    dist = _dist(tmp_path, {"pkg/kvarn.py": NEW_MODULE, "pkg/mod.py": REPLACED})
    peer = tmp_path / "peer"
    shutil.copytree(tmp_path / "upstream", peer)
    shutil.copytree(dist / "patches", peer / "patches")
    env = {**os.environ, "QUILT_PATCHES": "patches", "QUILTRC": "/dev/null"}
    subprocess.run(["quilt", "push", "-a", "--fuzz=0"], cwd=peer, env=env, check=True, capture_output=True)
    subprocess.run(["cp", "-r", f"{dist / 'overlay'}/.", str(peer)], check=True)
    assert forklift("-c", str(dist), "tree", str(tmp_path / "out")).returncode == 0
    ours = tree_bytes(tmp_path / "out")
    record = json.loads(ours.pop("FORKLIFT-TREE.json"))
    assert ours == tree_bytes(peer, ignore=(".pc", "patches"))
    assert [f["path"] for f in record["overlay_files"]] == ["pkg/kvarn.py", "pkg/mod.py"]


def test_an_overlay_python_file_must_compile_and_an_identical_one_is_flagged(tmp_path):
    dist = _dist(tmp_path, {"pkg/broken.py": "def f(:\n", "pkg/other.py": MOD})
    proc = forklift("-c", str(dist), "check")
    assert proc.returncode == 1
    assert "FAIL compile: pkg/broken.py: pkg/broken.py:1: SyntaxError" in proc.stdout
    assert "FAIL overlay: pkg/other.py: the overlay file is identical to the tree's: drop it" in proc.stdout


def test_bad_overlay_folders_are_one_line(tmp_path):
    dist = _dist(tmp_path, {})
    (dist / "overlay").mkdir()
    proc = forklift("-c", str(dist), "check")
    assert proc.returncode == 2 and proc.stderr.strip().endswith(
        "the overlay folder is empty (overlay.dir in forklift.toml)"
    )
    shutil.rmtree(dist / "overlay")
    proc = forklift("-c", str(dist), "check")
    assert proc.returncode == 2 and "no such folder (overlay.dir in forklift.toml)" in proc.stderr
    (dist / "overlay").mkdir()
    (dist / "overlay" / "link.py").symlink_to("/etc/passwd")
    with pytest.raises(ForkliftError, match=r"link\.py: overlay entries must be regular files"):
        read_overlay(dist / "overlay")


def test_upstream_drift_flags_overlay_files_upstream_changed_with_their_stat():
    old = {"pkg/mod.py": MOD.encode(), "pkg/same.py": b"x\n"}
    new = {
        "pkg/mod.py": MOD.replace("v7 = 7\n", "v7 = 70\nv7b = 71\n").encode(),
        "pkg/same.py": b"x\n",
        "pkg/kvarn.py": b"y\n",
    }
    drift = upstream_drift(old.get, new.get, ["pkg/mod.py", "pkg/same.py", "pkg/kvarn.py"])
    assert [(d.path, d.added, d.removed) for d in drift] == [("pkg/kvarn.py", 1, 0), ("pkg/mod.py", 2, 1)]
    assert str(drift[1]) == "pkg/mod.py: upstream changed it (+2 -1) and the overlay replaces it whole"


def test_overlay_files_sit_below_the_patch_root(tmp_path):
    overlay = read_overlay(_write(tmp_path / "ov", {"v1/new.py": "x = 1\n"}), root="vllm")
    assert overlay == {"vllm/v1/new.py": b"x = 1\n"}


def _write(folder, files):
    write_files(folder, files)
    return folder


def test_manifest_write_and_check_count_the_overlay_files(tmp_path):
    """`forklift manifest --write` requires what check holds it to: the series' files and the overlay's."""
    dist = _dist(tmp_path, {"pkg/kvarn.py": NEW_MODULE, "pkg/other.py": REPLACED})
    wrote = forklift("-c", str(dist), "manifest", "--write")
    assert wrote.returncode == 0 and "3 files" in wrote.stdout, wrote.stdout + wrote.stderr
    assert '"pkg/kvarn.py",\n  "pkg/mod.py",\n  "pkg/other.py",\n' in (dist / "patches" / "MANIFEST.toml").read_text()
    checked = forklift("-c", str(dist), "manifest")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(forklift("-c", str(dist), "check", "--json").stdout)["ok"]
    shutil.rmtree(dist / "overlay" / "pkg")
    write_files(dist / "overlay", {"pkg/kvarn.py": NEW_MODULE})
    lost = forklift("-c", str(dist), "manifest")
    assert lost.returncode == 1
    assert "the series no longer changes pkg/other.py (MANIFEST.toml requires it)" in lost.stdout
