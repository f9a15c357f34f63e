"""Property tests of files from another box: any bytes, any JSON and any valid receipt or cohort with one value
replaced by any JSON, read as a receipt or a cohort, give the model or one ForkliftError line, never another
exception; a receipt read is written back and read again unchanged.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from forklift.errors import ForkliftError
from forklift.receipts import new_receipt, read_receipts, write_receipt
from forklift.stats import bench_runs
from forklift.stats.requests import COLUMNS
from forklift.stats.sample import read_bench_runs
from forklift.workload import load_cohort
from tests.properties.test_any_input import assert_one_line
from tests.stats.synthetic import bench_receipt, records

SCRATCH = Path(tempfile.mkdtemp(prefix="forklift-properties-"))  # one file rewritten per case, not one per case

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
RECEIPT = json.loads(
    new_receipt(
        "bench", body={"cells": [{"name": "c1", "requests": [{"prompt_id": "p", "send": 0.0, "end": 1.5}]}]}
    ).model_dump_json(by_alias=True)
)
COHORT_LINE = {"id": "p1", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "sampling": {}}


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside `value` (dict keys and list indexes), the root included."""
    found = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += paths(inner, (*prefix, index))
    return found


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = replaced(value[path[0]], path[1:], new)  # type: ignore[index]
    return copy


def mutant(original: Any) -> st.SearchStrategy[Any]:
    """`original` with the value at one of its paths replaced by any JSON."""
    return st.tuples(st.sampled_from(paths(original)), JSON).map(lambda change: replaced(original, *change))


def as_text(value: Any) -> bytes:
    return json.dumps(value).encode()  # NaN and Infinity as Python writes them: what a careless writer leaves


FILE = st.one_of(
    st.binary(max_size=200),
    JSON.map(as_text),
    mutant(RECEIPT).map(as_text),
    st.builds(lambda depth: b"[" * depth + b"]" * depth, st.integers(1, 200_000)),
)


@given(raw=FILE)
@example(raw=b"[" * 100_000 + b"]" * 100_000)  # deeper than Python's recursion limit
@example(raw=as_text(replaced(RECEIPT, ("body", "cells", 0, "requests", 0, "send"), float("nan"))))
@example(raw=as_text(RECEIPT).replace(b'"send": 0.0', b'"send": ' + b"9" * 5000))
def test_any_receipt_file_reads_or_is_one_line(raw):
    path = SCRATCH / "receipt.json"
    path.write_bytes(raw)
    try:
        [(_, receipt)] = read_receipts([path])
    except ForkliftError as exc:
        assert_one_line(exc)
        return
    again = write_receipt(receipt, SCRATCH, SCRATCH / "again.json")
    [(_, back)] = read_receipts([again])
    assert back == receipt


BENCH = json.loads(bench_receipt({"c1": records(2, runs=2, tokens=3)}).model_dump_json(by_alias=True))


@given(raw=FILE | mutant(BENCH).map(as_text))
@example(raw=as_text(replaced(BENCH, ("body", "cells", 0, "requests", 0, "prompt_id"), '"}, {"')))
@example(raw=as_text(replaced(BENCH, ("body", "cells", 0, "requests", 0), {"\r": None})))  # the key in msgspec's words
@example(raw=as_text(RECEIPT)[:-40])
def test_any_receipt_file_streams_as_it_reads_whole_or_is_one_line(raw):
    """The streaming reader gives what the whole one gives, or one line; where both read it, the same."""
    path = SCRATCH / "streamed.json"
    path.write_bytes(raw)
    try:
        streamed, found = read_bench_runs([path])
    except ForkliftError as exc:
        assert_one_line(exc)
        return
    try:
        whole_receipts = read_receipts([path])
        whole = bench_runs(whole_receipts)
    except ForkliftError:
        return  # the whole reader is stricter in places (an integer of 41 digits where a count is not used)
    assert [r for _, r in found if r.kind != "bench"] == [r for _, r in whole_receipts if r.kind != "bench"]
    assert [(r.receipt, r.body) for r in streamed] == [(r.receipt, r.body) for r in whole]
    for a, b in zip(streamed, whole, strict=True):
        assert a.columns.keys() == b.columns.keys()
        for name in a.columns:
            for column in COLUMNS:
                np.testing.assert_array_equal(getattr(a.columns[name], column), getattr(b.columns[name], column))


COHORT = st.lists(
    st.one_of(mutant(COHORT_LINE).map(as_text), JSON.map(as_text), st.binary(max_size=40)), min_size=1, max_size=5
).map(b"\n".join)


@given(raw=COHORT)
@example(raw=b'{"id": "p", "prompt": "x", "max_tokens": 1' + b"0" * 5000 + b"}")
@example(raw=b'{"id": "p", "prompt": "x"}\n{"id": "p", "prompt": "y"}')
def test_any_cohort_file_loads_or_is_one_line(raw):
    path = SCRATCH / "cohort.jsonl"
    path.write_bytes(raw)
    try:
        workload = load_cohort(path)
    except ForkliftError as exc:
        assert_one_line(exc)
        return
    ids = [item.id for item in workload.items]
    assert workload.items and len(set(ids)) == len(ids)
    assert all(item.max_tokens is None or item.max_tokens > 0 for item in workload.items)
