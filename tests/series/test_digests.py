"""Patch digests: each patch file's sha256 in check's JSON and receipt, and a SHA256SUMS the gate holds them to.

The SHA256SUMS format is GNU `sha256sum`'s: the file forklift accepts is one `sha256sum -c` accepts too.
"""

from __future__ import annotations

import hashlib
import json
import subprocess

import pytest

from forklift.errors import ForkliftError
from forklift.receipts import read_receipts
from forklift.series.digests import parse_sums
from tests.series.distro import MOD, distribution, edit, forklift

PATCHES = {"a.patch": edit("pkg/mod.py", 5, "v5 = 50"), "sub/b.patch": edit("pkg/mod.py", 20, "v20 = 200")}


def _dist(tmp_path, **kw):
    return distribution(tmp_path, {"pkg/mod.py": MOD}, dict(PATCHES), **kw)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_json_receipt_and_table_carry_each_patch_files_sha256(tmp_path):
    dist = _dist(tmp_path)
    report = json.loads(forklift("-c", str(dist), "check", "--json").stdout)
    assert {row["name"]: row["sha256"] for row in report["pass1"]} == {n: _sha(t) for n, t in PATCHES.items()}
    [(_, receipt)] = read_receipts([dist / "receipts"])
    assert [row["sha256"] for row in receipt.body["pass1"]] == [_sha(t) for t in PATCHES.values()]
    table = forklift("-c", str(dist), "check", "--digests").stdout
    assert _sha(PATCHES["a.patch"])[:16] in table


def test_sha256sum_output_beside_series_passes_and_sha256sum_agrees(tmp_path):
    dist = _dist(tmp_path)
    folder = dist / "patches"
    sums = subprocess.run(
        ["sha256sum", "a.patch", "sub/b.patch"], cwd=folder, capture_output=True, text=True, check=True
    )
    (folder / "SHA256SUMS").write_text(sums.stdout)
    subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=folder, check=True)
    proc = forklift("-c", str(dist), "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_changed_patch_is_named_and_sha256sum_agrees_it_differs(tmp_path):
    dist = _dist(tmp_path)
    folder = dist / "patches"
    (folder / "SHA256SUMS").write_text("".join(f"{_sha(t)}  {n}\n" for n, t in PATCHES.items()))
    (folder / "sub/b.patch").write_text(edit("pkg/mod.py", 20, "v20 = 201"))
    assert subprocess.run(
        ["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=folder, capture_output=True, check=False
    ).returncode
    proc = forklift("-c", str(dist), "check")
    assert proc.returncode == 1
    line = next(line for line in proc.stdout.splitlines() if line.startswith("FAIL digests"))
    assert line.startswith(f"FAIL digests: sub/b.patch: SHA256SUMS: sha256 {_sha(edit('pkg/mod.py', 20, 'v20 = 201'))}")
    assert f"differs from the published {_sha(PATCHES['sub/b.patch'])}" in line


def test_configured_digests_file_elsewhere_must_cover_every_patch(tmp_path):
    dist = _dist(tmp_path, series_keys='digests = "SHA256SUMS"')
    (dist / "SHA256SUMS").write_text(f"{_sha(PATCHES['a.patch'])} *patches/a.patch\n")
    proc = forklift("-c", str(dist), "check")
    assert proc.returncode == 1
    assert "FAIL digests: patches/sub/b.patch: SHA256SUMS: not listed" in proc.stdout
    (dist / "SHA256SUMS").unlink()
    proc = forklift("-c", str(dist), "check")
    assert proc.returncode == 2 and "no such file (series.digests in forklift.toml)" in proc.stderr


@pytest.mark.parametrize(
    "text,message",
    [
        ("abc  a.patch\n", "SHA256SUMS:1: expected 'SHA256  NAME'"),
        (f"{'0' * 64}  a.patch\n{'1' * 64}  a.patch\n", "SHA256SUMS:2: 'a.patch' is listed twice"),
    ],
)
def test_bad_sums_lines_name_file_and_line(tmp_path, text, message):
    with pytest.raises(ForkliftError) as exc:
        parse_sums(text, tmp_path / "SHA256SUMS")
    assert message in str(exc.value)
