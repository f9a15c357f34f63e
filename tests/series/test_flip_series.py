"""`forklift flip` carries what the series file and the overlay say: a skipped entry is a row that says why,
and an overlay file whose upstream counterpart changed between the pins is flagged with its diff stat."""

from __future__ import annotations

import json

from tests.series.distro import MOD, commit_all, edit, forklift, write_files


def _flipping(tmp_path, releases, patches, series, overlay, series_keys="", engine="vllm"):
    """A distribution pinned to tag v1 of a local git upstream (v1, v2: the files each release commits)."""
    repo = tmp_path / "upstream"
    commit = commit_all(repo, releases[0], "v1", tag="v1")
    commit_all(repo, releases[1], "v2", tag="v2")
    dist = tmp_path / "dist"
    write_files(dist / "patches", patches)
    (dist / "patches" / "series").write_text(series)
    write_files(dist / "overlay", overlay)
    (dist / "forklift.toml").write_text(
        f'[engine]\nkind = "{engine}"\n[upstream]\nsource = "git"\nurl = "{repo}"\ntag = "v1"\ncommit = "{commit}"\n'
        f'[series]\npatches_md = ""\n{series_keys}[overlay]\ndir = "overlay"\n'
    )
    proc = forklift("-c", str(dist), "flip", "v2", "--json", "--receipts", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    return dist, json.loads(proc.stdout)


def test_flip_shows_skipped_rows_and_overlay_files_upstream_changed(tmp_path):
    dist, report = _flipping(
        tmp_path,
        ({"pkg/mod.py": MOD, "pkg/conf.py": "a = 1\n"}, {"pkg/conf.py": "a = 1\nb = 2\nc = 3\n"}),
        {"a.patch": edit("pkg/mod.py", 5, "v5 = 50"), "old.patch": "stale\n"},
        "a.patch\n# forklift: skip old.patch -- went native in v1\n",
        {"pkg/conf.py": "a = 10\n"},
        engine="generic",
    )
    assert [(p["name"], p["verdict"]) for p in report["patches"]] == [("a.patch", "exact"), ("old.patch", "skipped")]
    assert report["overlay_changed"] == ["pkg/conf.py: upstream changed it (+2 -0) and the overlay replaces it whole"]
    table = forklift("-c", str(dist), "flip", "v2", "--receipts", str(tmp_path / "r")).stdout
    assert "skipped: went native in v1" in table and "overlay pkg/conf.py: upstream changed it (+2 -0)" in table


def test_flip_knobs_read_the_overlay_files_over_both_patched_trees(tmp_path):
    """An overlay module's bare read of an unregistered knob is the distribution's own, on the new release too."""
    registry = 'environment_variables = {\n    "VLLM_A": lambda: 1,\n}\n'
    _, report = _flipping(
        tmp_path,
        (
            {"vllm/envs.py": registry, "vllm/mod.py": MOD},
            {"vllm/envs.py": registry.replace("}\n", '    "VLLM_D": lambda: 4,\n}\n')},
        ),
        {"a.patch": edit("mod.py", 5, "v5 = 50")},  # below the root
        "a.patch\n",
        {"kvarn.py": 'import os\n\nLIMIT = os.environ.get("VLLM_C")\n'},
        'root = "vllm"\n',
    )
    pristine, patched = report["knobs"]
    assert pristine["added"] == patched["added"] == ["VLLM_D"]
    assert patched["series_unregistered_reads"] == ['vllm/kvarn.py:3: os.environ.get("VLLM_C") (unregistered)']
    assert patched["unregistered_after"] == pristine["unregistered_after"] + 1


def test_flip_write_keeps_overlay_files_the_manifest_requires(tmp_path):
    """`manifest --write` lists overlay files; the manifest flip rewrites must keep them (the lost-work guard)."""
    dist, _ = _flipping(
        tmp_path,
        ({"pkg/mod.py": MOD, "pkg/conf.py": "a = 1\n"}, {"pkg/new.py": "n = 1\n"}),
        {"a.patch": edit("pkg/mod.py", 5, "v5 = 50")},
        "a.patch\n",
        {"pkg/conf.py": "a = 10\n"},
        engine="generic",
    )
    assert forklift("-c", str(dist), "manifest", "--write").returncode == 0
    manifest = dist / "patches" / "MANIFEST.toml"
    assert "pkg/conf.py" in manifest.read_text()
    flipped = forklift("-c", str(dist), "flip", "v2", "--write", "--receipts", str(tmp_path / "r"))
    assert flipped.returncode == 0, flipped.stderr
    assert 'tag = "v2"' in (dist / "forklift.toml").read_text()
    assert "pkg/conf.py" in manifest.read_text() and "pkg/mod.py" in manifest.read_text()
