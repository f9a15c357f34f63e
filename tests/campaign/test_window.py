"""A campaign stops cleanly between cells at --max-cells or before a cell that would end after --until, and the
same command goes on from there. The cells here stand in for boots (each writes the finished-cell receipt a boot
would, with the seconds a boot took): what is tested is when the runner starts one, not the boot itself."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from forklift.campaign import load_campaign_file, make_campaign_plan
from forklift.campaign.run import Runner, WindowEnd, finished
from forklift.cli.campaign import deadline
from forklift.config import load_config
from forklift.errors import UsageError
from forklift.receipts.envelope import Labels

ROOT = Path(__file__).resolve().parents[2]


class Booted(Runner):
    """Each cell finishes at once, recording that it took 60 s (an H200 boot cell takes 50-68 s)."""

    def run_cell(self, cell):
        self._finish(cell.key, "ok", {"seconds": 60.0}, Labels())


def runner(tmp_path: Path, **window) -> Runner:
    config = ROOT / "examples/known-answers/vllm-0.26.0/forklift.toml"
    text = (ROOT / "docs/gpu-report/campaign.toml").read_text()
    text = text.replace('"../../examples/known-answers/vllm-0.26.0/forklift.toml"', f'"{config}"')
    text = text.replace('"../../examples/known-answers/vllm-0.26.0/', f'"{config.parent}/')
    text = text.replace("${FORKLIFT_BUILDS}", str(tmp_path / "builds"))
    (tmp_path / "campaign.toml").write_text(text)
    spec = load_campaign_file(tmp_path / "campaign.toml")
    loaded = load_config(spec.at(spec.config))
    builds = {b: None for b in spec.builds}
    return Booted(spec, loaded, builds, make_campaign_plan(spec, loaded), say=lambda _: None, **window)  # type: ignore[arg-type]


def done(run: Runner) -> int:
    return sum(finished(run.receipts / key) for key in run.plan.keys)


def test_max_cells_stops_between_cells_and_the_next_run_goes_on(tmp_path):
    first = runner(tmp_path, max_cells=5)
    with pytest.raises(WindowEnd, match=r": not started: this run started its 5 cell\(s\) \(--max-cells\)$"):
        first.run_cells(first.plan.cells)
    assert done(first) == 5
    second = runner(tmp_path, max_cells=5)
    with pytest.raises(WindowEnd):
        second.run_cells(second.plan.cells)
    assert done(second) == 10
    last = runner(tmp_path, max_cells=5)
    assert last.run_cells(last.plan.cells) == (2, 10) and done(last) == 12


def test_until_starts_no_cell_that_would_end_after_it(tmp_path):
    run = runner(tmp_path, until=time.time() + 30)  # one 60 s cell would end after it
    with pytest.raises(WindowEnd, match=r"a cell takes about 60 s here and --until is \d+ s away$"):
        run.run_cells(run.plan.cells)
    assert done(run) == 1  # the first, with no cell to go by, starts
    later = runner(tmp_path, until=time.time() + 3600)
    assert later.run_cells(later.plan.cells) == (11, 1)


@pytest.mark.parametrize("text", ["9m", "540s", "2026-12-06T02:00:00Z", "2026-12-06T02:00"])
def test_until_reads_a_time_from_now_or_an_iso_time(text):
    assert deadline(text) > 0


@pytest.mark.parametrize("text", ["soon", "-5m", "9 minutes", "2026-13-06"])
def test_until_refuses_anything_else_in_one_line(text):
    with pytest.raises(UsageError, match=r"^--until '.*': give a time from now"):
        deadline(text)


def test_a_half_done_campaign_moved_to_another_machine_warms_up_again_says_so_and_finishes(tmp_path):
    """The lost machine is a fake fingerprint: the finished cells' receipts (and the warm-up's, made since this
    kernel booted) are rewritten as if another machine had made them."""
    import json

    from forklift.campaign.run import WARMUP_KIND
    from forklift.receipts import new_receipt, write_receipt
    from forklift.receipts.facts import kernel_boot_id
    from forklift.receipts.store import receipts_in

    first = runner(tmp_path, max_cells=5)
    (slot,) = first.plan.warmups
    body = {"key": slot.key, "seconds": 80.0, "boot": "ready", "receipts": "", "machine_boot": kernel_boot_id()}
    write_receipt(new_receipt(WARMUP_KIND, body=body), first.receipts / "warmups")
    assert first.warmed(slot)  # on the machine that warmed up
    with pytest.raises(WindowEnd):
        first.run_cells(first.plan.cells)
    for path in receipts_in(first.receipts, "**/*"):
        receipt = json.loads(path.read_text())
        receipt["fingerprint"] = {**receipt["fingerprint"], "machine_id": "lost-box", "hostname": "gpu-a"}
        path.write_text(json.dumps(receipt))
    said: list[str] = []
    moved = runner(tmp_path)
    moved.say = said.append
    assert moved.note_other_machines() == ["lost-box"] and not moved.warmed(slot)
    assert said[0].startswith("machine changed: cells were finished on lost-box (gpu-a); this is ")
    assert moved.run_cells(moved.plan.cells) == (7, 5) and done(moved) == 12
