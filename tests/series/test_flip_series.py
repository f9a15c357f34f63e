"""`forklift flip` carries what the series file and the overlay say: a skipped entry is a row that says why,
and an overlay file whose upstream counterpart changed between the pins is flagged with its diff stat."""

from __future__ import annotations

import json

from tests.series.distro import MOD, commit_all, edit, forklift, write_files


def test_flip_shows_skipped_rows_and_overlay_files_upstream_changed(tmp_path):
    repo = tmp_path / "upstream"
    commit = commit_all(repo, {"pkg/mod.py": MOD, "pkg/conf.py": "a = 1\n"}, "v1", tag="v1")
    commit_all(repo, {"pkg/conf.py": "a = 1\nb = 2\nc = 3\n"}, "v2", tag="v2")
    dist = tmp_path / "dist"
    write_files(dist / "patches", {"a.patch": edit("pkg/mod.py", 5, "v5 = 50"), "old.patch": "stale\n"})
    (dist / "patches" / "series").write_text("a.patch\n# forklift: skip old.patch -- went native in v1\n")
    write_files(dist / "overlay", {"pkg/conf.py": "a = 10\n"})
    (dist / "forklift.toml").write_text(
        f'[engine]\nkind = "generic"\n[upstream]\nsource = "git"\nurl = "{repo}"\ntag = "v1"\ncommit = "{commit}"\n'
        '[series]\npatches_md = ""\n[overlay]\ndir = "overlay"\n'
    )
    proc = forklift("-c", str(dist), "flip", "v2", "--json", "--receipts", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [(p["name"], p["verdict"]) for p in report["patches"]] == [("a.patch", "exact"), ("old.patch", "skipped")]
    assert report["overlay_changed"] == ["pkg/conf.py: upstream changed it (+2 -0) and the overlay replaces it whole"]
    table = forklift("-c", str(dist), "flip", "v2", "--receipts", str(tmp_path / "r")).stdout
    assert "skipped: went native in v1" in table and "overlay pkg/conf.py: upstream changed it (+2 -0)" in table


def test_flip_knobs_read_the_overlay_files_over_both_patched_trees(tmp_path):
    """An overlay module's bare read of an unregistered knob is the distribution's own, on the new release too."""
    registry = 'environment_variables = {\n    "VLLM_A": lambda: 1,\n}\n'
    repo = tmp_path / "upstream"
    commit = commit_all(repo, {"vllm/envs.py": registry, "vllm/mod.py": MOD}, "v1", tag="v1")
    commit_all(repo, {"vllm/envs.py": registry.replace("}\n", '    "VLLM_D": lambda: 4,\n}\n')}, "v2", tag="v2")
    dist = tmp_path / "dist"
    write_files(dist / "patches", {"a.patch": edit("mod.py", 5, "v5 = 50")})  # below the root
    (dist / "patches" / "series").write_text("a.patch\n")
    write_files(dist / "overlay", {"kvarn.py": 'import os\n\nLIMIT = os.environ.get("VLLM_C")\n'})
    (dist / "forklift.toml").write_text(
        f'[upstream]\nsource = "git"\nurl = "{repo}"\ntag = "v1"\ncommit = "{commit}"\n'
        '[series]\npatches_md = ""\nroot = "vllm"\n[overlay]\ndir = "overlay"\n'
    )
    proc = forklift("-c", str(dist), "flip", "v2", "--json", "--receipts", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    pristine, patched = json.loads(proc.stdout)["knobs"]
    assert pristine["added"] == patched["added"] == ["VLLM_D"]
    assert patched["series_unregistered_reads"] == ['vllm/kvarn.py:3: os.environ.get("VLLM_C") (unregistered)']
    assert patched["unregistered_after"] == pristine["unregistered_after"] + 1
