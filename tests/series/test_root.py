"""`[series] root`: patches written against a subfolder (an installed package's root), like `patch -d ROOT`
and `git apply --directory=ROOT`. The root is a path prefix, so every kind of pin takes it the same way."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from forklift.config.load import parse_config
from forklift.errors import ConfigError
from forklift.flip.triage import triage
from forklift.series.model import load_series
from tests.series.distro import MOD, commit_all, distribution, edit, forklift, tree_bytes, write_files

# vllm's installed layout: site-packages/vllm/...; the patches say a/v1/core/sched.py.
TREE = {"vllm/v1/core/sched.py": MOD, "vllm/envs.py": MOD, "setup.py": "x = 1\n"}
PATCHES = {
    "sched.patch": edit("v1/core/sched.py", 10, "v10 = 100"),
    "new-file.patch": "--- /dev/null\n+++ b/v1/kvarn.py\n@@ -0,0 +1 @@\n+K = 1\n",
}


def _dist(tmp_path, **kw):
    return distribution(tmp_path, TREE, PATCHES, series_keys='root = "vllm"', **kw)


def test_check_and_tree_with_a_root_equal_patch_d(tmp_path):
    dist = _dist(tmp_path)
    report = json.loads(forklift("-c", str(dist), "check", "--json").stdout)
    assert report["ok"], report["findings"]
    assert [f["path"] for f in report["touched"]] == ["vllm/v1/core/sched.py", "vllm/v1/kvarn.py"]
    peer = tmp_path / "peer"
    shutil.copytree(tmp_path / "upstream", peer)
    for name in PATCHES:
        subprocess.run(
            ["patch", "-d", "vllm", "-p1", "--batch", "--fuzz=0", "-i", str(dist / "patches" / name)],
            cwd=peer,
            check=True,
            capture_output=True,
        )
    assert forklift("-c", str(dist), "tree", str(tmp_path / "out")).returncode == 0
    ours = tree_bytes(tmp_path / "out")
    record = json.loads(ours.pop("FORKLIFT-TREE.json"))
    assert ours == tree_bytes(peer) and record["root"] == "vllm"


def test_git_apply_directory_agrees_and_a_git_pin_takes_the_root(tmp_path):
    upstream = tmp_path / "repo"
    commit = commit_all(upstream, TREE, "v1", tag="v1")
    dist = _dist(tmp_path)
    toml = (dist / "forklift.toml").read_text()
    pinned = f'[upstream]\nsource = "git"\nurl = "{upstream}"\ntag = "v1"\ncommit = "{commit}"\n'
    (dist / "forklift.toml").write_text(pinned + toml[toml.index("[series]") :])
    report = json.loads(forklift("-c", str(dist), "check", "--json").stdout)
    assert report["ok"], report["findings"]
    for name in PATCHES:
        subprocess.run(
            ["git", "-C", str(upstream), "apply", "--directory=vllm", str(dist / "patches" / name)], check=True
        )
    assert forklift("-c", str(dist), "tree", str(tmp_path / "out")).returncode == 0
    ours = tree_bytes(tmp_path / "out")
    ours.pop("FORKLIFT-TREE.json")
    assert ours == tree_bytes(upstream, ignore=(".git",))


def test_flip_recuts_a_rooted_patch_against_the_root(tmp_path):
    """A patch that moved on the new release is re-cut with paths below the root, so it still applies with -d."""
    dist = _dist(tmp_path)
    series = load_series(dist / "patches", root="vllm")
    old = {p: t.encode() for p, t in TREE.items()}
    moved = "v0 = 0\n" + MOD
    new = {**old, "vllm/v1/core/sched.py": moved.encode()}
    [sched, created] = triage(old.get, new.get, series.patches, series.applier)[0]
    assert sched.verdict == "offset" and created.verdict == "exact"
    assert "--- a/v1/core/sched.py\n+++ b/v1/core/sched.py\n" in sched.refreshed
    tree = tmp_path / "new"
    write_files(tree, {"vllm/v1/core/sched.py": moved})
    proc = subprocess.run(
        ["patch", "-d", "vllm", "-p1", "--batch", "--fuzz=0"],
        cwd=tree,
        input=sched.refreshed,
        text=True,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0 and "offset" not in proc.stdout, proc.stdout


def test_rendered_tables_name_tree_paths(tmp_path):
    from forklift.series.render import series_patches_md

    md = series_patches_md(load_series(_dist(tmp_path) / "patches", root="vllm"))
    assert "`vllm/v1/core/sched.py`" in md


@pytest.mark.parametrize("root", ["../vllm", "/vllm", "vllm/../x", "./vllm", "a\\\\b"])
def test_a_root_outside_the_tree_is_refused_naming_the_key(tmp_path, root):
    text = f'[upstream]\nsource = "path"\npath = "x"\nsha256 = "{"0" * 64}"\n[series]\nroot = "{root}"\n'
    with pytest.raises(ConfigError) as exc:
        parse_config(text, tmp_path / "forklift.toml")
    assert "series.root: " in str(exc.value) and "must be a relative folder inside the tree" in str(exc.value)


@pytest.mark.network
def test_the_example_series_rewritten_below_vllm_gives_the_same_overlay_hash_on_the_real_sdist(tmp_path, vllm_032_tree):
    """A pypi pin takes the root as any other: the example patches re-rooted at vllm/ change the same bytes."""
    example = Path(__file__).resolve().parents[2] / "examples" / "vllm"
    dist = tmp_path / "dist"
    shutil.copytree(example, dist, ignore=shutil.ignore_patterns("receipts"))
    for patch in (dist / "patches").glob("*.patch"):
        text = patch.read_text()
        for side in ("a", "b"):
            text = text.replace(f" {side}/vllm/", f" {side}/")
        patch.write_text(text)
    toml = dist / "forklift.toml"
    toml.write_text(
        toml.read_text()
        .replace("[series]\n", '[series]\nroot = "vllm"\npatches_md = ""\n')
        .replace('patches_md = "PATCHES.md"\n', "")
    )
    rooted = json.loads(forklift("-c", str(dist), "check", "--json").stdout)
    plain = json.loads(forklift("-c", str(example), "check", "--json", "--receipts", str(tmp_path / "r")).stdout)
    assert rooted["ok"] and plain["ok"], rooted["findings"]
    assert rooted["overlay_hash"] == plain["overlay_hash"]
    assert [f["path"] for f in rooted["touched"]] == [f["path"] for f in plain["touched"]]
