"""Receipts of schema /1 still read: the setting they stated in up to three places is kept once, in the envelope.

Replayed on the committed receipts (docs/example-report, docs/gpu-report), all written as /1.
"""

from __future__ import annotations

import json
from pathlib import Path

from forklift.bench.schema import BenchBody
from forklift.launch.schema import BootBody
from forklift.receipts import read_receipts, validated_body
from forklift.receipts.envelope import SCHEMA
from forklift.receipts.packed import read_receipt_json
from forklift.receipts.store import SCHEMA_1, read_receipt
from forklift.report import render_report

DOCS = Path(__file__).resolve().parents[2] / "docs"
COMPARE = DOCS / "gpu-report" / "receipts" / "compare"


def raw(path: Path) -> dict:
    return read_receipt_json(path)


def test_a_bench_that_stated_its_setting_in_its_body_names_it_in_the_envelope():
    # collect() copied each boot's setting into the --url benches' bodies, the envelope's stayed empty
    (path,) = COMPARE.glob("eager-b-*-bench-*.json.gz")
    assert raw(path)["schema"] == SCHEMA_1 and raw(path).get("setting") is None
    receipt = read_receipt(path)
    assert receipt.schema_ == SCHEMA and receipt.setting == raw(path)["body"]["setting"] == "h200 graphs=eager"
    assert "setting" not in receipt.body and validated_body(path, receipt, BenchBody).workload is not None


def test_a_boot_that_named_only_its_profile_in_the_envelope_keeps_the_setting_its_body_stated():
    (path,) = COMPARE.glob("*-boot-a9dba4076051.json.gz")
    assert (raw(path).get("setting"), raw(path)["profile"]["name"]) == (None, "h200")
    receipt = read_receipt(path)
    assert receipt.setting == "h200 graphs=cuda" and validated_body(path, receipt, BootBody).outcome == "ready"


def test_a_receipt_with_no_stated_setting_falls_back_to_its_profile_name(tmp_path):
    (path,) = COMPARE.glob("*-boot-a9dba4076051.json.gz")
    old = raw(path)
    del old["body"]["setting"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert read_receipt(tmp_path / "old.json").setting == "h200"


def test_a_ladders_body_keeps_its_setting_and_every_receipt_of_the_ladder_reads():
    receipts = read_receipts([DOCS / "gpu-report" / "receipts" / "ladder"])
    ladder = next(r for _, r in receipts if r.kind == "ladder")
    assert ladder.body["setting"] == ladder.setting == "h200 graphs=cuda"
    assert {r.setting for _, r in receipts if r.kind == "boot"} >= {"h200 graphs=cuda gpu-memory-utilization=0.999"}


def test_the_report_index_names_a_boot_by_its_setting_as_its_rows_do(tmp_path):
    # /1's index took the profile name first: a ladder rung's boot read `h200` beside rows saying `... =0.999`
    render_report(DOCS / "gpu-report" / "receipts" / "ladder", tmp_path / "ladder.md")
    index = (tmp_path / "ladder.md").read_text().split("## Receipts", 1)[1]
    booted = [line for line in index.splitlines() if "-boot-" in line]
    assert booted and all("| h200 graphs=cuda gpu-memory-utilization=0." in line for line in booted)
