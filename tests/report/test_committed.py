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


# What one committed campaign's receipts may take in the repository, packed (`forklift pack`): the largest,
# docs/gpu-report/ship-rerun (18 boots, 8B model, C1 and C16), takes 2.4 MiB; unpacked it took 12.8 MiB.
CAMPAIGN_EVIDENCE_LIMIT = 3 << 20
EVIDENCE = ["ship", "ship-rerun", "cross-boot", "ttft", "receipts"]


@pytest.mark.parametrize("folder", EVIDENCE)
def test_committed_gpu_evidence_is_packed_and_under_the_limit(folder):
    receipts = ROOT / "docs/gpu-report" / folder
    plain = list(receipts.rglob("*.json"))
    assert not plain, f"pack them: forklift pack {receipts.relative_to(ROOT)} ({len(plain)} plain receipts)"
    size = sum(p.stat().st_size for p in receipts.rglob("*.json.gz"))
    assert 0 < size <= CAMPAIGN_EVIDENCE_LIMIT, f"{folder}: {size:,} bytes of receipts"
