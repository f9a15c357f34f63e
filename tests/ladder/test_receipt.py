"""The ladder's receipts name the engine its boots ran: replayed on the real H200 ladder (docs/gpu-report).

The H200 ladder (2026-12-01) was run before the ladder recorded its engine, so its `ladder` receipt
names none while its boot receipts say vLLM 0.26.0 with the series' overlay. A boot receipt's
envelope is exactly the labels launch booted with, so it is the input the ladder's core receives.
"""

from __future__ import annotations

from pathlib import Path

from forklift.ladder.run import name_engine
from forklift.ladder.schema import LadderBody
from forklift.receipts import Receipt, new_receipt, read_receipts, write_receipt
from forklift.receipts.envelope import Labels
from forklift.receipts.store import read_receipt
from forklift.report.cells import ladder_tables

LADDER = Path(__file__).resolve().parents[2] / "docs" / "gpu-report" / "receipts" / "ladder"
BUILD = "0.26.0+10867b15"  # what every boot of that ladder recorded


def stored(kind: str) -> list[Receipt]:
    receipts = [read_receipt(p) for p in sorted(LADDER.glob("*.json.gz"))]
    return [r for r in receipts if r.kind == kind]


def boot_labels(boot: Receipt) -> Labels:
    return Labels.model_validate(boot.model_dump(include={"pin", "engine_version", "overlay_hash", "build", "setting"}))


def title(folder: Path) -> str:
    (table,) = ladder_tables(read_receipts([folder]))
    return table.splitlines()[0]


def test_the_ladder_receipt_names_the_engine_its_boots_recorded(tmp_path):
    (ladder,) = stored("ladder")
    boot = stored("boot")[0]
    receipt = name_engine(new_receipt("ladder", setting=ladder.setting, body=ladder.body), boot_labels(boot))
    assert receipt.engine_version == "0.26.0" and receipt.build == BUILD
    assert receipt.overlay_hash == boot.overlay_hash and receipt.pin == boot.pin
    assert receipt.setting == "h200 graphs=cuda"  # the ladder's setting, not the boot's (which names the value)
    write_receipt(receipt, tmp_path)  # the body's boots are absent here: the title is the ladder's own
    assert title(tmp_path) == f"### gpu-memory-utilization on {BUILD} / h200 graphs=cuda (vm)"


def test_a_build_label_given_survives_and_a_boot_that_knows_nothing_erases_nothing():
    receipt = new_receipt("ladder-cell", build="campaign-a", engine_version="0.26.0")
    name_engine(receipt, Labels(build=None, engine_version=None, overlay_hash=None, pin=None))
    assert (receipt.build, receipt.engine_version) == ("campaign-a", "0.26.0")


def test_a_ladder_that_did_not_record_its_engine_is_titled_by_its_boots(tmp_path):
    (ladder,) = stored("ladder")
    assert ladder.build is None and ladder.engine_version is None  # as recorded on the H200
    assert title(LADDER) == f"### gpu-memory-utilization on {BUILD} / h200 graphs=cuda (vm)"
    write_receipt(ladder, tmp_path)  # without its boots beside it, nothing says which engine ran
    assert title(tmp_path) == "### gpu-memory-utilization on unknown / h200 graphs=cuda (vm)"
    assert LadderBody.model_validate(ladder.body).cells[-1].boot_receipt == "20261201T111920-boot-f67ba6a40f99.json"
