"""JSON in and out from a box nobody trusts: bounded, regular files only, finite numbers, one line each.

Receipts are written by forklift's own writer (tests/stats/synthetic.py), then edited as an attacker would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forklift.errors import ForkliftError
from forklift.fsio import dumps_json, loads_json, read_bounded
from forklift.receipts.store import read_receipt
from tests.stats.synthetic import bench_receipt, records, written


def a_receipt(folder: Path) -> Path:
    return written(bench_receipt({"c1": records(4)}), folder)


def edited(path: Path, edit) -> Path:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    return path


def compare(*args: str) -> subprocess.CompletedProcess[str]:
    """The real command line (a FIFO that blocked would end the test at the timeout, not hang the suite)."""
    command = [sys.executable, "-m", "forklift", "compare", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_a_receipt_nested_100k_deep_is_one_line(tmp_path):
    path = a_receipt(tmp_path)
    text = path.read_text().replace('"body": {', '"body": {"deep": ' + "[" * 100_000 + "]" * 100_000 + ", ", 1)
    path.write_text(text)
    with pytest.raises(ForkliftError, match=r"r?.*\.json: not a readable receipt: nested more than 64 levels"):
        read_receipt(path)


def test_depth_just_past_the_limit_is_refused_after_parsing():
    with pytest.raises(ForkliftError, match="x: not a readable JSON file: nested more than 64 levels"):
        loads_json("[" * 65 + "]" * 65, "x")
    assert loads_json("[" * 64 + "]" * 64, "x")


def test_an_integer_of_5000_digits_is_refused_not_a_traceback(tmp_path):
    path = a_receipt(tmp_path)
    path.write_text(path.read_text().replace('"cpu_count": ', '"cpu_count": ' + "9" * 5000 + ', "x": ', 1))
    with pytest.raises(ForkliftError, match=r"not a readable receipt: an integer of 5,000 digits \(at most 40\)"):
        read_receipt(path)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_are_refused_on_read(tmp_path, value):
    path = a_receipt(tmp_path)
    text = path.read_text()
    path.write_text(text.replace('"first_token": ', f'"first_token": {value}, "was": ', 1))
    with pytest.raises(ForkliftError, match=r"not a readable receipt: .*(not a number JSON allows|overflows)"):
        read_receipt(path)


def test_compare_refuses_dev_zero_at_once():
    result = compare("/dev/zero", "/dev/zero")
    assert result.returncode == 1
    assert result.stderr == "error: /dev/zero: not a regular file (a character device); receipt must be a plain file\n"


def test_compare_on_a_fifo_named_json_ends_with_one_line(tmp_path):
    """On a FIFO nobody writes to, a plain open() waits forever; the bounded reader opens without blocking."""
    a_receipt(tmp_path / "a")
    os.mkfifo(tmp_path / "a" / "zz.json")
    result = compare(str(tmp_path / "a"), str(tmp_path / "a"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: {tmp_path / 'a' / 'zz.json'}: not a regular file (a FIFO); receipt must be a plain file"
    )


def test_a_file_over_the_size_limit_is_refused_before_reading(tmp_path, monkeypatch):
    path = a_receipt(tmp_path)
    path.write_text(path.read_text() + " " * (1 << 20))
    monkeypatch.setenv("FORKLIFT_MAX_FILE_MIB", "1")
    with pytest.raises(
        ForkliftError, match=r"receipt of 1,0[\d,]+ bytes is over the 1 MiB limit \(FORKLIFT_MAX_FILE_MIB"
    ):
        read_receipt(path)
    monkeypatch.setenv("FORKLIFT_MAX_FILE_MIB", "lots")
    with pytest.raises(ForkliftError, match=r"FORKLIFT_MAX_FILE_MIB='lots': expected a number of MiB"):
        read_bounded(path)


def test_a_cohort_that_is_a_device_or_hostile_json_is_one_line(tmp_path):
    from forklift.errors import UsageError
    from forklift.workload.cohort import load_cohort

    with pytest.raises(UsageError, match=r"/dev/zero: not a regular file \(a character device\); cohort must be"):
        load_cohort(Path("/dev/zero"))
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"id": "a", "prompt": "x", "meta": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(UsageError, match=r"deep.jsonl:1: not a readable cohort line: nested more than 64 levels"):
        load_cohort(deep)


def test_json_out_is_strict_an_undefined_statistic_is_null():
    text = dumps_json({"mde": float("nan"), "hi": [float("inf"), 1.5]})
    assert json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} written")) == {"mde": None, "hi": [None, 1.5]}


def test_a_negative_time_is_refused_where_the_body_is_read(tmp_path):
    from forklift.receipts import read_receipts
    from forklift.stats import bench_runs

    path = a_receipt(tmp_path)
    edited(path, lambda d: d["body"]["cells"][0]["requests"][1].update(send=-5.0))
    with pytest.raises(ForkliftError, match=r"invalid bench body at cells.0.requests: .*prompt 'p1': a time before"):
        bench_runs(read_receipts([path]))
    edited(path, lambda d: d["body"]["cells"][0]["requests"][1].update(send=0.5, end=0.1))
    with pytest.raises(ForkliftError, match=r"prompt 'p1': a time before its send"):
        bench_runs(read_receipts([path]))


@pytest.mark.parametrize("text", ["-5", "0", "nan", "inf", "lots", "1e400"])
def test_an_environment_limit_that_is_not_a_positive_number_is_one_line(text):
    """The one reader of FORKLIFT_* numbers (extract, download and answer limits): one line naming the variable."""
    from forklift.errors import UsageError
    from forklift.fsio import env_number

    with pytest.raises(UsageError, match=rf"^FORKLIFT_X={text!r}: expected a positive number of bytes$"):
        env_number("FORKLIFT_X", whole=text != "1e400", unit=" of bytes", environ={"FORKLIFT_X": text})


def test_an_environment_limit_reads_whole_numbers_rates_and_zero_where_allowed():
    from forklift.fsio import env_number

    assert env_number("X", environ={}) is None and env_number("X", environ={"X": "  "}) is None
    assert env_number("X", whole=True, environ={"X": " 64 "}) == 64
    assert env_number("X", environ={"X": "2.5"}) == 2.5
    assert env_number("X", zero=True, environ={"X": "0"}) == 0
    with pytest.raises(ForkliftError, match=r"X='2.5': expected a positive number$"):
        env_number("X", whole=True, environ={"X": "2.5"})
