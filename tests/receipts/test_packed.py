"""Packed receipts (NAME.json.gz): exact on the committed GPU receipts, read by every reader, bounded when hostile."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from forklift.errors import ForkliftError
from forklift.fsio import dumps_json, read_gunzipped
from forklift.receipts.packed import COLUMNS, pack_chunks, pack_receipt, read_receipt_json, unpack_chunks
from forklift.receipts.store import read_receipt, receipt_paths
from forklift.stats.sample import read_bench_runs
from tests.cli import forklift as run
from tests.stats.synthetic import bench_receipt, records, written

ROOT = Path(__file__).resolve().parents[2]
H200_BENCH = ROOT / "docs/gpu-report/ship/receipts/r1-gpu-8b-1-A/20261204T170635-bench-52693f335c83.json.gz"


def plain_copy(packed: Path, folder: Path) -> Path:
    """The receipt a packed one was made from, written back as the compact JSON forklift wrote it."""
    plain = folder / packed.name.removesuffix(".gz")
    plain.write_text(json.dumps(read_receipt_json(packed), separators=(",", ":")))
    return plain


def test_a_real_h200_bench_receipt_packs_to_a_fifth_and_reads_back_bit_for_bit(tmp_path):
    plain = plain_copy(H200_BENCH, tmp_path)
    original, size = dumps_json(json.loads(plain.read_text()), indent=None), plain.stat().st_size
    packed = pack_receipt(plain)
    assert not plain.exists() and packed.name == plain.name + ".gz"
    assert packed.stat().st_size < size / 5  # 786 kB -> 150 kB; gzip alone: 230 kB
    assert dumps_json(read_receipt_json(packed), indent=None) == original  # repr of every double: bit for bit
    chunks = json.loads(gzip.decompress(packed.read_bytes()))["body"]["cells"][0]["requests"][0]["chunks"]
    assert chunks["packed"] == COLUMNS and set(chunks["residual"]) <= {-1, 0, 1}


def test_a_packed_receipt_streams_into_the_columns_its_plain_copy_gives(tmp_path):
    plain = plain_copy(H200_BENCH, tmp_path)
    [whole], _ = read_bench_runs([plain])
    [packed], _ = read_bench_runs([pack_receipt(plain)])
    assert packed.receipt == whole.receipt and packed.body == whole.body
    for name, columns in whole.columns.items():
        for field in ("send", "first_token", "end", "burst", "tok_chunk", "tok_step", "run", "ok"):
            assert (getattr(packed.columns[name], field).tobytes()) == getattr(columns, field).tobytes(), field


@pytest.mark.parametrize(
    "chunks",
    [
        [[0.1, 1], [0.2, 2]],  # decimal fractions: not a whole number of nanoseconds
        [[1e-300, 1], [1e300, 1]],  # no exponent holds both exactly
        [[0.0, 1], [-0.0, 1]],  # a negative zero
        [[5e-324, 1]],  # the smallest double
        [[float(2**60), 1]],
    ],
)
def test_chunks_come_back_exactly_or_stay_as_they_were(chunks):
    packed = pack_chunks(chunks)
    if packed is not None:
        assert dumps_json(unpack_chunks(packed, "x")) == dumps_json(chunks)


@pytest.mark.parametrize("chunks", [[], [[1, 1]], [[0.5, 1.0]], [[0.5]], {"a": 1}, [[float("nan"), 1]], [[True, 1]]])
def test_chunks_of_another_shape_are_not_packed(chunks):
    assert pack_chunks(chunks) is None


def test_a_receipt_of_times_from_no_nanosecond_clock_reads_back_exactly_too(tmp_path):
    receipt = bench_receipt({"c1": records(3)})
    path = written(receipt, tmp_path)
    before = dumps_json(json.loads(path.read_text()), indent=None)
    assert dumps_json(read_receipt_json(pack_receipt(path)), indent=None) == before


@pytest.mark.parametrize(
    ("columns", "why"),
    [
        ({"packed": "other/9", "exponent": 0, "ns": [], "residual": [], "tokens": []}, "are not 'ns+residual/1'"),
        ({"packed": COLUMNS, "exponent": 10**6, "ns": [1], "residual": [0], "tokens": [1]}, "exponent is not"),
        ({"packed": COLUMNS, "exponent": 30, "ns": [1, 2], "residual": [0], "tokens": [1, 1]}, "differ in length"),
        ({"packed": COLUMNS, "exponent": 30, "ns": [1.5], "residual": [0], "tokens": [1]}, "lists of integers"),
        ({"packed": COLUMNS, "exponent": 1000, "ns": [10**30], "residual": [0], "tokens": [1]}, "not a time a double"),
        ({"packed": COLUMNS, "exponent": 0, "ns": [1], "residual": [0], "tokens": [1], "x": 1}, "are not"),
    ],
)
def test_packed_chunks_of_a_wrong_shape_are_one_line_naming_the_record(tmp_path, columns, why):
    receipt = json.loads(written(bench_receipt({"c1": records(1)}), tmp_path).read_text())
    receipt["body"]["cells"][0]["requests"][0]["chunks"] = columns
    path = tmp_path / "bad.json.gz"
    path.write_bytes(gzip.compress(json.dumps(receipt).encode()))
    for read in (read_receipt, lambda p: read_bench_runs([p])):
        with pytest.raises(
            ForkliftError, match=rf"^{path}: request record 0: packed chunk.*{re.escape(why)}"
        ) as caught:
            read(path)
        assert "\n" not in str(caught.value)


def test_a_packed_record_of_the_wrong_type_is_named_by_its_cell_and_index(tmp_path):
    receipt = json.loads(written(bench_receipt({"c1": records(2)}), tmp_path).read_text())
    receipt["body"]["cells"][0]["requests"][1]["run"] = "one"
    path = tmp_path / "bad.json.gz"
    path.write_bytes(gzip.compress(json.dumps(receipt).encode()))
    with pytest.raises(ForkliftError, match=rf"^{path}: invalid bench body at cells.0.requests.1.run: Expected `int`"):
        read_bench_runs([path])


def test_a_gzip_bomb_stops_at_the_size_limit_before_it_is_inflated(tmp_path, monkeypatch):
    monkeypatch.setenv("FORKLIFT_MAX_FILE_MIB", "1")
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b"[" + b" " * (1 << 30) + b"]", compresslevel=9))  # 1 GiB in about 1 MiB
    assert bomb.stat().st_size < 1 << 20
    with pytest.raises(ForkliftError, match=r"bomb.json.gz: receipt decompresses to over the 1 MiB limit"):
        read_receipt(bomb)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (gzip.compress(b'{"a": 1}')[:-6], "it ends inside a member"),
        (gzip.compress(b'{"a": 1}') + b"trailing", "incorrect header check"),
        (b"{}", "incorrect header check"),
        (gzip.compress(b"\xff{}"), "not UTF-8"),
    ],
)
def test_a_broken_gzip_file_is_one_line(tmp_path, content, why):
    path = tmp_path / "x.json.gz"
    path.write_bytes(content)
    with pytest.raises(ForkliftError, match=why) as caught:
        read_receipt(path)
    assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)


def test_gzip_members_one_after_another_read_as_one_file(tmp_path):
    path = tmp_path / "x.gz"
    path.write_bytes(gzip.compress(b"abc") + gzip.compress(b"") + gzip.compress(b"def"))
    assert read_gunzipped(path) == b"abcdef"


def test_a_fifo_named_like_a_packed_receipt_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "zz.json.gz"
    os.mkfifo(fifo)
    with pytest.raises(ForkliftError, match="not a regular file \\(a FIFO\\)"):
        read_receipt(fifo)


def test_forklift_pack_packs_a_folder_and_report_reads_it_as_before(tmp_path):
    folder = tmp_path / "receipts"
    shutil.copytree(ROOT / "docs/gpu-report/ttft/receipts", folder)
    for packed in receipt_paths([folder]):
        plain_copy(packed, packed.parent)
        packed.unlink()
    before = run("report", folder, "--output", tmp_path / "before" / "report.md")
    assert before.returncode == 0, before.stderr
    done = run("pack", folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"packed {len(list(folder.rglob('*.json.gz')))} receipts: ")
    assert not list(folder.rglob("*.json")) and run("pack", folder).stdout.startswith("packed 0 receipts")
    after = run("report", folder, "--output", tmp_path / "after" / "report.md")
    assert after.returncode == 0, after.stderr
    unpacked = (tmp_path / "after" / "report.md").read_text().replace(".json.gz", ".json")
    assert unpacked == (tmp_path / "before" / "report.md").read_text()


def test_pack_refuses_a_json_file_that_is_not_a_receipt(tmp_path):
    other = tmp_path / "result.json"
    other.write_text('{"a": 1}')
    done = run("pack", other)
    assert (
        done.returncode == 1
        and done.stderr.strip() == f"error: {other}: not a forklift receipt; only receipts are packed"
    )
    assert other.exists()
