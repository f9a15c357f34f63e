"""The GPU reports committed in docs/ are what `forklift report` renders from their committed receipts, byte for byte:
a change to the statistics or the wording shows here first, and the committed report is rendered again with it."""

import shutil
from pathlib import Path

import pytest

from forklift.report import render_report

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "folder",
    ["docs/gpu-report/ship", "docs/gpu-report/ship-rerun", "docs/gpu-report/cross-boot", "docs/gpu-report/ttft"],
)
def test_a_committed_campaign_report_renders_again_from_its_receipts(folder, tmp_path):
    committed = ROOT / folder
    shutil.copytree(committed / "receipts", tmp_path / "receipts")  # the report names receipts relative to itself
    _, files = render_report(tmp_path / "receipts", tmp_path / "report.md")
    assert files[0].read_text() == (committed / "report.md").read_text(), (
        f"forklift report {folder}/receipts --output {folder}/report.md renders another report"
    )
