"""The report over a campaign's labelled receipts (synthetic, through the real schemas): no flags, no relabelling."""

from forklift.ladder.schema import Burst, LadderBody, LadderCell
from forklift.receipts import new_receipt
from forklift.report import render_report
from forklift.stats import compare_groups
from tests.stats.synthetic import as_run, bench_receipt, records, written


def labelled(folder, build, setting, *, aa=None, speed=1.0, seed=0):
    receipt = bench_receipt({"c1": records(prompts=8, seed=seed, speed=speed)}, setting=setting)
    receipt = receipt.model_copy(update={"build": build, "setting": setting, "aa": aa, "engine_version": "0.32.0"})
    written(receipt, folder)
    return receipt


def ladder(folder):
    def cell(value, outcome, seconds, **facts):
        return LadderCell(
            key="K", value=value, setting=f"tiny K={value}", outcome=outcome, boot_seconds=seconds, **facts
        )

    cells = [
        cell(
            "1",
            "pass",
            30.0,
            kv_pool_tokens=1_048_576,
            requests=4,
            requests_ok=4,
            memory={"engine_rss_gib": 2.5, "host_available_gib": 12.0},
        ),
        cell("2", "pass", 31.0, kv_pool_tokens=2_097_152, requests=4, requests_ok=4),
        cell("4096", "boot-failed", 20.0, reason="died: 14.02 GiB available, 4096.00 needed"),
    ]
    body = LadderBody(
        profile="tiny",
        setting="tiny",
        key="K",
        values=["1", "2", "4096"],
        burst=Burst(),
        cells=cells,
        highest_pass="2",
        recommended="1",
        note="one step below the highest pass",
    )
    written(new_receipt("ladder", build="A", setting="tiny", body=body.model_dump(mode="json")), folder)


def test_report_compares_builds_by_label_and_prints_the_aa_shift_beside_each_row(tmp_path):
    folder = tmp_path / "receipts"
    first = labelled(folder, "A", "plain", aa=1, seed=1)
    labelled(folder, "B", "plain", speed=1.3, seed=2)
    second = labelled(folder, "A", "plain", aa=2, seed=3)
    ladder(folder)
    written(
        new_receipt(
            "campaign-cell",
            build="A",
            setting="plain",
            aa=1,
            body={
                "key": "r1-plain-1-A",
                "boot": "ready",
                "control": "held",
                "suites": [{"kind": "bench", "status": "ok"}],
            },
        ),
        folder,
    )
    _, paths = render_report(folder, tmp_path / "report.md")
    text = paths[0].read_text()
    header = next(line for line in text.splitlines() if line.startswith("| setting"))
    assert header.endswith("| verdict | A/A shift (old, 2nd vs 1st) |")
    row = next(line for line in text.splitlines() if line.startswith("| plain | c1 |"))
    # the shift is stats' own paired comparison of copy 2 against copy 1
    expected = compare_groups([as_run(first)], [as_run(second)]).cells[0].metric("decode_tps").estimate
    assert f"decode tok/s: not claimable (Δ {expected.change:+.1%}, CI {expected.low:+.1%}..{expected.high:+.1%}" in row
    # the A/B verdict: one boot a side is shown, in the words the interval allows
    assert "B faster" in row or "B slower" in row or "within noise" in row or "not claimable" in row
    assert "### A (old) → B (new)" in text  # builds from the receipts' labels: nothing to pass, nothing relabelled
    assert "## Memory ladders" in text
    assert "| 2 | pass (4/4 ok) | 2,097,152 | – | 31.0 | highest pass |" in text
    assert (
        "| 1 | pass (4/4 ok) | 1,048,576 | engine rss 2.50 GiB, host available 12.00 GiB | 30.0 | recommended |" in text
    )
    assert "| 4096 | boot-failed (died: 14.02 GiB available, 4096.00 needed) | not reported | – | 20.0 |  |" in text
    assert "## Campaign cells" in text and "| r1-plain-1-A | A | plain | 1 | ready | held | bench ok | – | ok |" in text
    assert "1 cell and 0 warm-up boots took 0.0 minutes of engine time" in text  # this cell's receipt states none
