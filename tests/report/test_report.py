"""forklift report over synthetic campaigns written through the real schemas (bench and boot receipts)."""

import re

import pytest
from matplotlib.image import imread

from forklift.errors import ForkliftError
from forklift.launch.schema import BootBody, BootFacts
from forklift.receipts import new_receipt
from forklift.report import load_campaign, render_report
from tests.cli import forklift
from tests.stats.synthetic import bench_receipt, records, workload, written

CELLS = {"single": 1, "c2": 2, "c4": 4}


def bench(folder, version, setting, *, speed=1.0, machine=None, seed=0, pool=57_669, **kwargs):
    cells = {name: records(prompts=8, seed=seed + i, speed=speed) for i, name in enumerate(CELLS)}
    receipt = bench_receipt(
        cells,
        setting=setting,
        engine_version=version,
        concurrency=CELLS,
        machine=machine,
        metrics_delta={n: {"spec_drafts": 100, "spec_accepted_tokens": 200} for n in CELLS}
        if setting == "ngram"
        else {n: {"generation_tokens": 1} for n in CELLS},
        **kwargs,
    )
    receipt.body["server_info"] = {"kv_cache_size_tokens": str(pool)}
    return written(receipt, folder)


def boot(folder, version, setting, outcome, **facts):
    receipt = new_receipt(
        "boot",
        engine_version=version,
        profile={"name": setting},
        setting=setting,
        status="ok" if outcome == "ready" else "failed",
        body=BootBody(outcome=outcome, boot_seconds=12.5, facts=BootFacts(**facts)).model_dump(),
    )
    return written(receipt, folder)


@pytest.fixture
def campaign(tmp_path):
    folder = tmp_path / "campaign"
    for setting in ("plain", "ngram"):
        bench(folder, "0.32.0", setting, seed=1)
    bench(folder, "0.33.0", "plain", speed=1.25, seed=2)
    boot(
        folder,
        "0.33.0",
        "ngram",
        "refused",
        memory_available_gib=4.63,
        memory_needed_gib=4.76,
        fatal="ValueError: not enough KV cache memory",
    )
    return folder


def test_report_renders_tables_refusals_and_plots(campaign, tmp_path):
    out = tmp_path / "out" / "report.md"
    _result, files = render_report(campaign, out)
    assert files == [
        out,
        out.with_name("report-throughput.png"),
        out.with_name("report-ttft.png"),
        out.with_name("report-forest.png"),
    ]
    text = out.read_text()
    assert "### 0.32.0 (old) → 0.33.0 (new)" in text
    assert "| setting | cell | old tok/s | new tok/s | old pool | new pool | tok/step | verdict |" in text
    plain_single = next(line for line in text.splitlines() if line.startswith("| plain | single |"))
    assert (
        "57,669" in plain_single
        and "decode tok/s: not claimable (Δ +" in plain_single
        and "no spec → no spec" in plain_single
    )
    ngram_single = next(line for line in text.splitlines() if line.startswith("| ngram | single |"))
    assert ngram_single.endswith(  # never a blank that reads as zero
        "| refused (4.63 GiB available, 4.76 needed) | 57,669 | none (refused) | – | not compared: one side has no numbers |"
    )
    assert "## Paired detail" in text and "MDE" in text and "Welch's t over the units" in text
    # the box is named with its GPUs or CPU count: hostnames repeat across VMs
    assert re.search(
        r"\| vm \(\d+ CPUs\) \| 0\.33\.0 \| ngram \| refused \| not reported \| 12\.5 \| "
        r"refused \(4\.63 GiB available, 4\.76 needed\) \|",
        text,
    )
    for png in files[1:]:
        assert f"]({png.name})" in text
        height, width, _ = imread(png).shape
        assert height > 200 and width > 400


def test_forest_plot_is_skipped_when_nothing_is_compared(tmp_path):
    folder = tmp_path / "one"
    bench(folder, "0.32.0", "plain")
    _, files = render_report(folder, tmp_path / "r.md")
    text = (tmp_path / "r.md").read_text()
    assert "One build (0.32.0): numbers only" in text and "| plain | single |" in text
    assert [f.name for f in files] == ["r.md", "r-throughput.png", "r-ttft.png"]


def test_boxes_are_rows_never_averaged(tmp_path):
    folder = tmp_path / "boxes"
    for machine, speed in (("box-a", 1.0), ("box-b", 3.0)):
        bench(folder, "0.32.0", "plain", machine=machine, seed=1)
        bench(folder, "0.33.0", "plain", machine=machine, seed=2, speed=speed)
    campaign = load_campaign(folder)
    assert {(row.host.split(" (")[0], row.cell) for row in campaign.rows} == {
        (h, c) for h in ("box-a", "box-b") for c in CELLS
    }
    for row in campaign.rows:
        assert {r.hostname for r in row.old.runs + row.new.runs} == {row.host.split(" (")[0]}
    by_host = {
        row.host.split(" (")[0]: row.result.metric("decode_tps").estimate.change
        for row in campaign.rows
        if row.cell == "single"
    }
    assert by_host["box-a"] == pytest.approx(0.0, abs=0.1) and by_host["box-b"] == pytest.approx(2.0, abs=0.3)
    _, files = render_report(folder, tmp_path / "boxes.md")
    text = (tmp_path / "boxes.md").read_text()
    assert (
        "| box | setting | cell |" in text
        and re.search(r"\| box-a \(\d+ CPUs\) \| plain \| single \|", text)
        and re.search(r"\| box-b \(\d+ CPUs\) \| plain \| single \|", text)
    )
    height, _, _ = imread(files[1]).shape  # one throughput panel per box
    assert height > 800


def test_an_incomparable_pair_is_marked_in_its_row(tmp_path):
    folder = tmp_path / "mixed"
    bench(folder, "0.32.0", "plain")
    bench(folder, "0.33.0", "plain", ident=workload(max_tokens=512))
    row = load_campaign(folder).rows[0]
    assert row.result is None and row.refused.startswith("not comparable: workload.max_tokens differs: 64 in")


def test_baseline_setting_compares_knobs_on_one_build(tmp_path):
    folder = tmp_path / "knob"
    bench(folder, "0.32.0", "plain", seed=1)
    bench(folder, "0.32.0", "ngram", seed=2)
    campaign = load_campaign(folder, baseline="plain")
    assert campaign.by_setting and {row.setting for row in campaign.rows} == {"plain → ngram"}
    assert all(
        row.old.tok_step(row.cell) == "no spec" and row.new.tok_step(row.cell) == "3.00" for row in campaign.rows
    )


def test_boot_outcomes_are_spelled_out(tmp_path):
    folder = tmp_path / "boots"
    bench(folder, "0.32.0", "plain")
    boot(folder, "0.33.0", "plain", "died", fatal="RuntimeError: CUDA error: out of memory")
    row = load_campaign(folder).rows[0]
    assert row.new.state == "died (RuntimeError: CUDA error: out of memory)"


def test_bad_campaigns_are_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ForkliftError, match="empty: no bench, boot, ladder, quality or canary receipts to report"):
        load_campaign(tmp_path / "empty")
    bench(tmp_path / "c", "0.32.0", "plain")
    with pytest.raises(ForkliftError, match=r"--baseline 'x': not a build \(0.32.0\) or setting \(plain\)"):
        load_campaign(tmp_path / "c", baseline="x")


def test_report_command_line(campaign, tmp_path):
    done = forklift("report", campaign)
    assert done.returncode == 0, done.stderr
    assert (campaign / "report.md").exists() and (campaign / "report-forest.png").exists()
    missing = forklift("report", tmp_path / "nope")
    assert missing.returncode == 2 and "nope: not a folder of receipts" in missing.stderr
