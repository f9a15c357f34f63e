"""The reports committed in docs/ (the GPU campaigns, and the CPU example with the baseline its page names) are what `forklift report` renders from their committed receipts, byte for byte:
a change to the statistics or the wording shows here first, and the committed report is rendered again with it."""

import shutil
from pathlib import Path

import pytest

from forklift.report import render_report

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("folder", "baseline"),
    [
        ("docs/gpu-report/ship", None),
        ("docs/gpu-report/ship-rerun", None),
        ("docs/gpu-report/cross-boot", None),
        ("docs/gpu-report/ttft", None),
        ("docs/example-report", "plain"),  # as docs/commands/report.md says to re-render it
    ],
)
def test_a_committed_campaign_report_renders_again_from_its_receipts(folder, baseline, tmp_path):
    committed = ROOT / folder
    shutil.copytree(committed / "receipts", tmp_path / "receipts")  # the report names receipts relative to itself
    _, files = render_report(tmp_path / "receipts", tmp_path / "report.md", baseline=baseline)
    assert files[0].read_text() == (committed / "report.md").read_text(), (
        f"forklift report {folder}/receipts --output {folder}/report.md renders another report"
    )
