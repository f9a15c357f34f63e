"""The streaming reader (forklift.receipts.stream, records into forklift.stats.requests columns) against the
whole one: real receipts (the suite's, the example report's, the GPU report's) give the same columns and the
same comparison read either way, however the records are cut into batches; hostile ones are one line naming
the file, read directly and through `forklift compare`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from forklift.bench.schema import BenchBody
from forklift.errors import ForkliftError
from forklift.receipts import read_receipts
from forklift.receipts import stream as stream_module
from forklift.receipts.packed import read_receipt_json
from forklift.receipts.store import receipt_paths
from forklift.stats import bench_runs, compare_groups, match
from forklift.stats.requests import COLUMNS, RequestColumns, columns_of
from forklift.stats.sample import read_bench_runs
from tests.stats.synthetic import bench_receipt, records, written

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = [ROOT / "tests/stats/data/receipts", ROOT / "docs/example-report/receipts", ROOT / "docs/gpu-report"]
BENCH = sorted(
    path
    for folder in FOLDERS
    for path in receipt_paths([folder])
    if not path.name.startswith("vllm-") and read_receipt_json(path).get("kind") == "bench"
)


def assert_same_columns(a: RequestColumns, b: RequestColumns) -> None:
    assert a.prompt_ids == b.prompt_ids and a.outputs == b.outputs
    for name in COLUMNS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)  # NaN equals NaN here


def test_the_real_receipts_are_there():
    assert len(BENCH) >= 20 and any("gpu-report" in str(p) for p in BENCH) and any("example" in str(p) for p in BENCH)


@pytest.mark.parametrize("path", BENCH, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_real_receipt_streamed_gives_what_it_gives_read_whole(path):
    [whole], [streamed] = bench_runs(read_receipts([path])), read_bench_runs([path])[0]
    assert streamed.receipt == whole.receipt and streamed.body == whole.body
    assert streamed.columns.keys() == whole.columns.keys() == {cell.name for cell in whole.body.cells}
    for name, columns in whole.columns.items():
        assert_same_columns(streamed.columns[name], columns)


@pytest.mark.parametrize("window", [1, 100, 5000])
def test_any_cut_into_batches_gives_the_same_columns(monkeypatch, window):
    """A window smaller than a record, or cutting anywhere: the batches that parse are whole records."""
    monkeypatch.setattr(stream_module, "WINDOW", window)
    for path in BENCH[::3]:
        [whole], [streamed] = bench_runs(read_receipts([path])), read_bench_runs([path])[0]
        for name, columns in whole.columns.items():
            assert_same_columns(streamed.columns[name], columns)


def test_columns_hold_each_records_own_values():
    """Every value the columns give is the one RequestRecord computes for that record (or NaN for its None)."""
    checked = 0
    for path in BENCH:
        [(_, receipt)] = read_receipts([path])
        [run] = bench_runs([(path, receipt)])
        for cell in BenchBody.model_validate(receipt.body).cells:
            columns = run.columns[cell.name]
            for field in ("ttft", "tpot", "e2e", "decode_tps"):
                expected = [getattr(r, field) for r in cell.requests]
                np.testing.assert_array_equal(getattr(columns, field), np.array(expected, dtype=float), err_msg=field)
            assert columns.ok.tolist() == [r.ok for r in cell.requests]
            assert columns.burst.tolist() == [r.delivered_in_burst for r in cell.requests]
            assert columns.prompt_of(np.arange(len(columns))) == [r.prompt_id for r in cell.requests]
            assert columns.output_of(np.arange(len(columns))) == [r.output_sha256 for r in cell.requests]
            for record, value in zip(cell.requests, columns.tok_chunk.tolist(), strict=True):
                decode = [tokens for _, tokens in record.chunks[1:] if tokens > 0]
                usage = record.chunk_tokens_from == "usage" and decode
                assert value == sum(decode) / len(decode) if usage else np.isnan(value)
            checked += len(columns)
    assert checked > 1000


def sides(folder: Path, pattern: str) -> list:
    return [run for path in sorted(folder.glob(pattern)) for run in read_bench_runs([path])[0]]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("tests/stats/data/receipts/plain-a", "tests/stats/data/receipts/plain-b"),
        ("tests/stats/data/receipts/aa1-a", "tests/stats/data/receipts/ngram"),
        (
            "docs/example-report/receipts/r1-plain-1-0.32.0+example",
            "docs/example-report/receipts/r1-ngram-1-0.32.0+example",
        ),
    ],
)
def test_real_receipts_compare_the_same_streamed_or_read_whole(a, b):
    runs = [(bench_runs(read_receipts([ROOT / side])), read_bench_runs([ROOT / side])[0]) for side in (a, b)]
    (whole_a, streamed_a), (whole_b, streamed_b) = runs
    results = []
    for side_a, side_b in ((whole_a, whole_b), (streamed_a, streamed_b)):
        matching = match(side_a, side_b, across_machines=True)
        results.append([compare_groups(x, y, across_machines=True).model_dump() for x, y in matching.pairs])
    assert results[0] == results[1] and results[0][0]["cells"]


def a_receipt(folder: Path, prompts: int = 6) -> Path:
    return written(bench_receipt({"c1": records(prompts)}), folder)


def edited_text(path: Path, edit) -> Path:
    path.write_text(edit(path.read_text()))
    return path


def refused(path: Path, pattern: str) -> str:
    with pytest.raises(ForkliftError) as caught:
        read_bench_runs([path])
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: "), message
    assert re.search(pattern, message), message
    return message


def test_a_truncated_receipt_is_one_line(tmp_path):
    path = a_receipt(tmp_path)
    text = path.read_text()
    for cut in (len(text) // 2, text.index('"requests"') + 400, len(text) - 3):
        path.write_text(text[:cut])
        refused(path, r"not a readable receipt: .*(truncated|ends early|expected)")


def test_deep_nesting_outside_and_inside_the_records_is_one_line(tmp_path):
    path = a_receipt(tmp_path)
    deep = "[" * 100_000 + "]" * 100_000
    text = path.read_text()
    path.write_text(text.replace('"body": {', '"body": {"deep": ' + deep + ", ", 1))
    refused(path, r"nested more than 64 levels")
    path.write_text(text.replace('"spec": null', '"spec": ' + deep, 1))
    refused(path, r"invalid bench body at cells\.0\.requests\.0\.spec|nested more than 64 levels")


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999", "9" * 5000])
def test_non_finite_and_huge_numbers_in_a_record_are_one_line(tmp_path, value):
    path = edited_text(a_receipt(tmp_path), lambda t: t.replace('"first_token": ', f'"first_token": {value}, "x": ', 1))
    refused(path, r"not a readable receipt|invalid bench body at cells\.0\.requests\.0")
    path = edited_text(a_receipt(tmp_path / "run"), lambda t: t.replace('"run": 0', f'"run": {value}', 1))
    refused(path, r"not a readable receipt|invalid bench body at cells\.0\.requests\.0")


def test_a_huge_integer_in_the_envelope_is_refused_as_read_whole(tmp_path):
    path = edited_text(
        a_receipt(tmp_path), lambda t: t.replace('"cpu_count": ', '"cpu_count": ' + "9" * 5000 + ', "x": ')
    )
    refused(path, r"not a readable receipt: an integer of 5,000 digits \(at most 40\)")


@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        (lambda r: r.update(x=1), r"cells\.0\.requests\.2: Object contains unknown field `x`"),
        (lambda r: r.update(prompt_id=7), r"cells\.0\.requests\.2\.prompt_id: Expected `str`, got `int`"),
        (lambda r: r.update(chunks=[[0.5, 1, 2]]), r"cells\.0\.requests\.2\.chunks\[0\]: Expected `array` of length 2"),
        (lambda r: r.update(send=-1.0), r"cells\.0\.requests: prompt 'p2': a time before its send"),
        (lambda r: r.update(end=r["first_token"] - 1e-3), r"prompt 'p2': (ends before its first token|a time before)"),
    ],
)
def test_a_bad_record_is_one_line_naming_it(tmp_path, edit, pattern):
    path = a_receipt(tmp_path)
    data = json.loads(path.read_text())
    edit(data["body"]["cells"][0]["requests"][2])
    path.write_text(json.dumps(data, indent=2))
    refused(path, pattern)


def test_a_record_that_is_not_an_object_is_one_line(tmp_path):
    path = a_receipt(tmp_path)
    data = json.loads(path.read_text())
    data["body"]["cells"][0]["requests"][1] = [1, 2]
    path.write_text(json.dumps(data))
    refused(path, r"cells\.0\.requests\.1: Expected `object`, got `array`")


def test_prompt_ids_that_look_like_record_boundaries_read_as_written(tmp_path, monkeypatch):
    """`}, {` inside strings: a cut there cannot parse, so the window is walked instead."""
    monkeypatch.setattr(stream_module, "WINDOW", 300)
    reqs = records(5)
    for i, record in enumerate(reqs):
        record.prompt_id = f'p{i}"}}, {{"x": "]'
    path = written(bench_receipt({"c1": reqs}), tmp_path)
    [whole], [streamed] = bench_runs(read_receipts([path])), read_bench_runs([path])[0]
    assert_same_columns(streamed.columns["c1"], whole.columns["c1"])
    assert streamed.columns["c1"].prompt_ids[0] == 'p0"}, {"x": "]'


def test_records_over_their_budget_and_a_record_over_the_limit_are_one_line(tmp_path, monkeypatch):
    path = a_receipt(tmp_path, prompts=2000)
    # 0.12 MiB: the file (3.5 MB, each record with its null conversation fields) stays under 32x the limit, so the
    # records-as-columns budget is what refuses it
    monkeypatch.setenv("FORKLIFT_MAX_FILE_MIB", "0.12")
    refused(path, r"its request records would take over 0 MiB as columns \(FORKLIFT_MAX_FILE_MIB raises it\)")
    monkeypatch.setenv("FORKLIFT_MAX_FILE_MIB", "0.0625")
    big = edited_text(
        a_receipt(tmp_path / "big"),
        lambda t: t.replace('"finish_reason": ', '"error": "' + "x" * 70_000 + '", "finish_reason": ', 1),
    )
    refused(big, r"a request record at byte [\d,]+ is over the 0.0625 MiB limit")
    outside = edited_text(
        a_receipt(tmp_path / "out"), lambda t: t.replace('"body": {', '"body": {"note": "' + "y" * 70_000 + '", ', 1)
    )
    refused(outside, r"receipt is over the 0.0625 MiB limit .*outside its records")


def test_a_fifo_or_a_device_is_refused_without_reading(tmp_path):
    fifo = tmp_path / "zz.json"
    os.mkfifo(fifo)
    refused(fifo, r"not a regular file \(a FIFO\); receipt must be a plain file")
    with pytest.raises(ForkliftError, match=r"^/dev/zero: not a regular file \(a character device\)"):
        read_bench_runs([Path("/dev/zero")])


def test_compare_on_a_hostile_receipt_prints_one_line(tmp_path):
    good = a_receipt(tmp_path / "a")
    bad = edited_text(a_receipt(tmp_path / "b"), lambda t: t.replace('"send": ', '"send": NaN, "x": ', 1))
    done = subprocess.run(
        [sys.executable, "-m", "forklift", "compare", str(good), str(bad)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: {bad}: not a readable receipt"), done.stderr


def test_kept_rows_follow_the_cells_kept_runs(tmp_path):
    path = a_receipt(tmp_path)
    [run] = read_bench_runs([path])[0]
    columns, rows = run.columns["c1"], run.kept_rows("c1")
    assert sorted(set(columns.run[rows].tolist())) == run.kept_runs("c1")
    assert all(b >= a for a, b in pairwise(rows.tolist()))


def test_a_huge_value_is_refused_once_the_limit_is_read_not_after_the_file(tmp_path, monkeypatch):
    """A sparse file of NUL bytes, an endless record, endless whitespace: each walk stops at the size limit."""
    monkeypatch.setenv("FORKLIFT_MAX_FILE_MIB", "1")
    head = b'{"kind": "bench", "body": {"cells": [{"requests": ['
    for name, start, pattern in (
        ("zero.json", b"", r"receipt is over the 1 MiB limit .*outside its records"),
        ("record.json", head + b'{"prompt_id": "', r"a request record at byte 51 is over the 1 MiB limit"),
        ("space.json", head + b" " * (2 << 20), r"whitespace at byte 51 runs over the 1 MiB limit"),
    ):
        path = tmp_path / name
        with path.open("wb") as out:
            out.write(start)
            out.truncate(32 << 20)  # the most a streamed receipt may be at this limit
        refused(path, pattern)


def test_a_bad_record_in_a_later_batch_is_named_by_its_index_in_the_cell(tmp_path, monkeypatch):
    monkeypatch.setattr(stream_module, "WINDOW", 300)  # a record or two a batch
    path = a_receipt(tmp_path)
    data = json.loads(path.read_text())
    data["body"]["cells"][0]["requests"][4]["chunks"] = [[0.5, 1.5]]
    path.write_text(json.dumps(data))
    refused(path, r"cells\.0\.requests\.4\.chunks\[0\]\[1\]: Expected `int`, got `float`")


TIME = st.floats(-1.0, 1e6) | st.integers(0, 10**20)
TOKENS = st.integers(-2, 64) | st.integers(0, 2**70)
ODD_CHUNK = st.one_of(
    st.tuples(TIME).map(list),
    st.tuples(TIME, TOKENS, TOKENS).map(list),
    st.tuples(TIME, st.sampled_from([1.5, 2.0, 1e20, "1", True, None, [1], {}])).map(list),
    st.tuples(st.sampled_from(["0.5", True, None, [0.5], {}]), TOKENS).map(list),
    TIME,
    st.just({}),
)
CHUNKS = st.lists(st.tuples(TIME, TOKENS).map(list) | ODD_CHUNK, max_size=5) | st.sampled_from([None, {}, "[]", 5])


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("chunks")


@given(chunks=CHUNKS, indent=st.sampled_from([None, 1]))
@example(chunks=[[0.5, 1], [1, 2]], indent=None)
@example(chunks=[[0.5, 1.0]], indent=None)
@example(chunks=[[[0.5, 1]]], indent=1)
@example(chunks=[[0.5, 1], 0.5, 1], indent=None)
def test_a_batchs_chunks_read_together_give_what_each_records_own_decode_gives(scratch, chunks, indent):
    """The chunks of a batch, read as one text, give what decoding the record's chunks alone as RequestRecord
    types them (`list[tuple[float, int]]`) gives: the same columns, the same refusal naming the record, or the
    same error of its times."""
    reqs = records(3)  # the first one sent at 0
    data = json.loads(bench_receipt({"c1": reqs}).model_dump_json(by_alias=True))
    data["body"]["cells"][0]["requests"][0]["chunks"] = chunks
    path = scratch / "chunks.json"
    path.write_text(json.dumps(data, indent=indent))
    try:
        decoded = msgspec.json.decode(json.dumps(chunks), type=list[tuple[float, int]])
    except msgspec.ValidationError:
        refused(path, r"invalid bench body at cells\.0\.requests\.0\.chunks(\[\d+\])*: Expected")
        return
    try:
        expected = columns_of([reqs[0].model_copy(update={"chunks": decoded}), *reqs[1:]])
    except ValueError as exc:
        refused(path, re.escape(f"invalid bench body at cells.0.requests: {exc}"))
        return
    assert_same_columns(read_bench_runs([path])[0][0].columns["c1"], expected)


TRUNCATING = """
import os, sys
from pathlib import Path
from forklift.errors import ForkliftError
from forklift.receipts import stream
from forklift.stats.requests import Record
path, to = Path(sys.argv[1]), int(sys.argv[2])
stream.WINDOW = 2000  # several batches
def records(cell, batch):
    if os.stat(path).st_size != to:
        os.truncate(path, to)
try:
    stream.read_receipt_streaming(path, Record, records)
except ForkliftError as exc:
    sys.exit(f"error: {exc}")
"""


@pytest.mark.parametrize("keep", [0.5, 0.0, 0.999])
def test_a_receipt_truncated_while_it_is_read_is_one_line(tmp_path, keep):
    """The file is truncated by the records callback after the first batch (the test's own callback: a real
    truncation of the real file, between two of the reader's steps). A reader that maps the file dies of SIGBUS
    at its next look: the read runs in a child process, so that would fail this test rather than end pytest."""
    path = a_receipt(tmp_path, prompts=60)
    to = int(path.stat().st_size * keep)
    done = subprocess.run(
        [sys.executable, "-c", TRUNCATING, str(path), str(to)], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1, done.stderr
    assert re.fullmatch(
        rf"error: {re.escape(str(path))}: changed while it was read \(.+\); read it again.*\n", done.stderr
    )


@pytest.mark.parametrize("indent", [None, 2])
def test_records_that_end_inside_the_window_are_cut_not_walked(tmp_path, monkeypatch, indent):
    """A receipt smaller than the window (most are): each cell's records but its last are one cut, the text after
    them (the cell's own fields, the next cell's records) notwithstanding; walking them value by value took a
    GPU campaign's 24 receipts 33 s."""
    walked: list[int] = []
    record_end = stream_module._Scan.record_end

    def counted(self, pos):
        walked.append(pos)
        return record_end(self, pos)

    monkeypatch.setattr(stream_module._Scan, "record_end", counted)
    data = json.loads(bench_receipt({"c1": records(40), "c16": records(40)}).model_dump_json(by_alias=True))
    path = tmp_path / "small.json"
    path.write_text(json.dumps(data, indent=indent))
    [whole], [streamed] = bench_runs(read_receipts([path])), read_bench_runs([path])[0]
    for name, columns in whole.columns.items():
        assert_same_columns(streamed.columns[name], columns)
    assert len(walked) == 2  # the last record of each cell
