"""Receipts and every other file forklift rewrites: atomic, whole, and with the mode a user expects."""

from __future__ import annotations

import os
import stat

import pytest

from forklift.errors import ForkliftError
from forklift.fsio import write_atomic
from forklift.receipts import new_receipt, read_receipts, write_receipt


def test_receipt_round_trip_keeps_envelope_and_body(tmp_path):
    receipt = new_receipt("check", status="failed", pin={"source": "pypi"}, overlay_hash="sha256:x", body={"n": 1})
    path = write_receipt(receipt, tmp_path)
    [(read_path, back)] = read_receipts([tmp_path])
    assert read_path == path and back == receipt
    assert back.fingerprint.cpu_count == os.cpu_count()


def test_rewriting_a_growing_receipt_leaves_no_temp_files(tmp_path):
    receipt = new_receipt("bench", status="partial")
    path = write_receipt(receipt, tmp_path)
    write_receipt(receipt.model_copy(update={"status": "ok"}), tmp_path, path)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
    assert read_receipts([path])[0][1].status == "ok"


def test_new_files_get_the_umask_mode_and_old_files_keep_theirs(tmp_path):
    old = os.umask(0o022)
    try:
        fresh = tmp_path / "PATCHES.md"
        write_atomic(fresh, "x")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
        script = tmp_path / "run.sh"
        script.write_text("old")
        script.chmod(0o755)
        write_atomic(script, b"new")
        assert stat.S_IMODE(script.stat().st_mode) == 0o755 and script.read_bytes() == b"new"
    finally:
        os.umask(old)


@pytest.mark.parametrize(
    "text,message",
    [
        ("{not json", "not a readable receipt"),
        ('{"schema": "other/1"}', "schema 'other/1' is not 'forklift.receipt/2'"),
        ('{"schema": "forklift.receipt/2", "kind": "check"}', "invalid receipt at fingerprint"),
    ],
)
def test_a_bad_receipt_is_one_line_naming_the_file(tmp_path, text, message):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(ForkliftError) as exc:
        read_receipts([path])
    assert str(exc.value).startswith(str(path)) and message in str(exc.value)
