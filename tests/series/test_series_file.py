"""Series files as people write them: subfolders, unlisted files, skip entries, compressed patches, bad bytes.

Where quilt has an opinion it is asked: `quilt push -a` on the same series must build the same tree.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess

import pytest

from forklift.series.model import PatchError, load_series, skip_entries
from forklift.series.render import series_patches_md
from tests.series.distro import MOD, distribution, edit, forklift, tree_bytes, write_files

SUBFOLDER_SERIES = (
    "debian/fix-one.patch\n# forklift: skip upstream/went-native.patch -- went native in 0.28.0\nupstream/two.diff.gz\n"
)


def _subfolder_patches() -> dict[str, str | bytes]:
    return {
        "debian/fix-one.patch": "Description: first\nKind: fix\n\n" + edit("pkg/mod.py", 5, "v5 = 50"),
        "upstream/went-native.patch": edit("pkg/mod.py", 9, "v9 = 90"),
        "upstream/two.diff.gz": gzip.compress(edit("pkg/mod.py", 20, "v20 = 200").encode()),
        "old/unlisted.patch": edit("pkg/mod.py", 25, "v25 = 250"),
    }


def test_subfolders_gzip_and_skip_load_in_order_with_unlisted_as_a_note(tmp_path):
    dist = distribution(tmp_path, {"pkg/mod.py": MOD}, _subfolder_patches(), series=SUBFOLDER_SERIES)
    series = load_series(dist / "patches")
    assert [p.name for p in series.patches] == ["debian/fix-one.patch", "upstream/two.diff.gz"]
    assert [(s.name, s.reason, s.after) for s in series.skipped] == [
        ("upstream/went-native.patch", "went native in 0.28.0", 1)
    ]
    unlisted, series_file = dist / "patches" / "old/unlisted.patch", dist / "patches" / "series"
    assert series.notes == (f"{unlisted}: patch file is not listed in {series_file} (not applied)",)
    raw = (dist / "patches" / "upstream/two.diff.gz").read_bytes()
    assert series.digests["upstream/two.diff.gz"] == hashlib.sha256(raw).hexdigest()  # the file as published
    assert "- `upstream/went-native.patch`: skipped: went native in 0.28.0" in series_patches_md(series)


def test_the_tree_equals_quilt_push_on_subfolders_gzip_and_a_skip_line(tmp_path):
    """quilt reads the skip line as a comment, gunzips .gz entries and ignores unlisted files: so must we."""
    dist = distribution(tmp_path, {"pkg/mod.py": MOD}, _subfolder_patches(), series=SUBFOLDER_SERIES)
    quilt_tree = tmp_path / "quilt"
    shutil.copytree(tmp_path / "upstream", quilt_tree)
    shutil.copytree(dist / "patches", quilt_tree / "patches")
    env = {**os.environ, "QUILT_PATCHES": "patches", "QUILTRC": "/dev/null"}
    subprocess.run(["quilt", "push", "-a", "--fuzz=0"], cwd=quilt_tree, env=env, check=True, capture_output=True)
    proc = forklift("-c", str(dist), "tree", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    ours = tree_bytes(tmp_path / "out")
    ours.pop("FORKLIFT-TREE.json")
    assert ours == tree_bytes(quilt_tree, ignore=(".pc", "patches"))
    assert b"v5 = 50\n" in ours["pkg/mod.py"] and b"v9 = 9\n" in ours["pkg/mod.py"]


def test_check_shows_skipped_rows_notes_and_json(tmp_path):
    dist = distribution(tmp_path, {"pkg/mod.py": MOD}, _subfolder_patches(), series=SUBFOLDER_SERIES)
    proc = forklift("-c", str(dist), "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipped: went native in 0.28.0" in proc.stdout
    assert "note" in proc.stdout and "unlisted.patch: patch file is not listed" in proc.stdout.replace("\n", "")
    report = json.loads(forklift("-c", str(dist), "check", "--json").stdout)
    assert report["skipped"][0]["name"] == "upstream/went-native.patch"
    assert [row["name"] for row in report["pass1"]] == ["debian/fix-one.patch", "upstream/two.diff.gz"]


def test_unlisted_error_refuses_the_series(tmp_path):
    dist = distribution(
        tmp_path, {"pkg/mod.py": MOD}, _subfolder_patches(), series=SUBFOLDER_SERIES, series_keys='unlisted = "error"'
    )
    proc = forklift("-c", str(dist), "check")
    assert proc.returncode == 1
    assert proc.stderr.strip().endswith(
        f"old/unlisted.patch: patch file is not listed in {dist / 'patches' / 'series'}"
    )
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "series,files,message",
    [
        ("a.patch\n# forklift: skip b.patch\n", {"b.patch": "x"}, "expected '# forklift: skip NAME -- reason'"),
        ("a.patch\n# forklift: skip b.patch --  \n", {"b.patch": "x"}, "expected '# forklift: skip NAME -- reason'"),
        ("a.patch\n# forklift: frobnicate b.patch\n", {}, "expected '# forklift: skip NAME -- reason'"),
        ("a.patch\n# forklift: skip gone.patch -- why\n", {}, "lists 'gone.patch', which is not in"),
        ("a.patch\n# forklift: skip a.patch -- why\n", {}, "'a.patch' is both listed and skipped"),
        ("/etc/a.patch\n", {}, "must be a relative path inside the series folder"),
        ("sub/../../a.patch\n", {}, "must be a relative path inside the series folder"),
        ("a.patch\nbad.patch.gz\n", {"bad.patch.gz": "not gzip"}, "bad.patch.gz: not a valid gz file"),
    ],
)
def test_bad_series_lines_are_one_line_naming_file_and_line(tmp_path, series, files, message):
    folder = tmp_path / "patches"
    write_files(folder, {"a.patch": edit("pkg/mod.py", 5, "v5 = 50"), **files})
    (folder / "series").write_text(series)
    with pytest.raises(PatchError) as exc:
        load_series(folder)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_non_utf8_series_names_file_and_line(tmp_path):
    dist = distribution(tmp_path, {"pkg/mod.py": MOD}, {"a.patch": edit("pkg/mod.py", 5, "v5 = 50")})
    (dist / "patches" / "series").write_bytes(b"# ok\na.patch\nb\xe9.patch\n")
    proc = forklift("-c", str(dist), "check")
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        f"error: {dist / 'patches' / 'series'}:3: not UTF-8 (byte 0xe9); save the series file as UTF-8"
    )


def test_skip_lines_round_trip_through_the_series_text(tmp_path):
    from forklift.series.model import skip_line

    text = "a.patch\n# forklift: skip b.patch -- kept, skipped: went native in 0.28.0\nc.patch\n"
    [skip] = skip_entries(text, tmp_path / "series")
    assert skip_line(skip) == "# forklift: skip b.patch -- kept, skipped: went native in 0.28.0"
    assert skip.after == 1
