"""Series files from a box nobody trusts: a device, a FIFO or a folder where a file belongs, a byte that is not
UTF-8, a pinned tree too deep to walk. Each is one `error:` line naming the path, never a hang or a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.series.distro import MOD, distribution, edit, forklift

PATCHES = {"a.patch": edit("pkg/mod.py", 5, "v5 = 50")}


def _dist(tmp_path: Path) -> Path:
    return distribution(tmp_path, {"pkg/mod.py": MOD}, dict(PATCHES))


def last_error(proc) -> str:
    assert proc.returncode in (1, 2), proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr.strip().splitlines()[-1]


@pytest.mark.timeout(60)
def test_a_series_file_that_is_dev_zero_is_refused_unread(tmp_path):
    dist = _dist(tmp_path)
    series = dist / "patches" / "series"
    series.unlink()
    series.symlink_to("/dev/zero")
    assert last_error(forklift("-c", str(dist), "check")) == (
        f"error: {series}: not a regular file (a character device); the series file must be a plain file"
    )


@pytest.mark.timeout(60)
def test_a_patch_that_is_a_fifo_is_named_as_a_fifo(tmp_path):
    dist = _dist(tmp_path)
    patch = dist / "patches" / "a.patch"
    patch.unlink()
    os.mkfifo(patch)
    assert last_error(forklift("-c", str(dist), "check")) == (
        f"error: {patch}: not a regular file (a FIFO); a patch must be a plain file"
    )


@pytest.mark.parametrize("kind", ["folder", "device"])
def test_sha256sums_that_is_a_folder_or_device_is_refused_not_skipped(tmp_path, kind):
    dist = _dist(tmp_path)
    sums = dist / "patches" / "SHA256SUMS"
    if kind == "folder":
        sums.mkdir()
    else:
        sums.symlink_to("/dev/null")
    what = "a folder" if kind == "folder" else "a character device"
    assert last_error(forklift("-c", str(dist), "check")) == (
        f"error: {sums}: not a regular file ({what}); SHA256SUMS must be a plain file"
    )


def test_sha256sums_with_a_byte_that_is_not_utf8_is_one_line(tmp_path):
    dist = _dist(tmp_path)
    sums = dist / "patches" / "SHA256SUMS"
    sums.write_bytes(b"0" * 64 + b"  a\xff.patch\n")
    assert last_error(forklift("-c", str(dist), "check")) == (
        f"error: {sums}:1: not UTF-8 (byte 0xff); save SHA256SUMS as UTF-8"
    )


def test_a_path_pin_2000_folders_deep_is_one_line(tmp_path):
    dist = _dist(tmp_path)
    deep = tmp_path / "upstream"
    here = os.getcwd()
    os.chdir(deep)  # a path this deep is longer than PATH_MAX: build it one relative step at a time
    try:
        for _ in range(2000):
            os.mkdir("d")
            os.chdir("d")
        Path("f").write_text("x")
        os.chdir(here)
        message = last_error(forklift("-c", str(dist), "check"))
        assert message.startswith(f"error: {deep}: ") and "cannot be pinned" in message, message
    finally:  # removed bottom up, one step at a time: rmtree (and pytest's own cleanup) would recurse too deep
        os.chdir(deep)
        depth = 0
        while os.path.isdir("d"):
            os.chdir("d")
            depth += 1
        Path("f").unlink(missing_ok=True)
        for _ in range(depth):
            os.chdir("..")
            os.rmdir("d")
        os.chdir(here)
