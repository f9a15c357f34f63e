"""The report's quality table and canary table, one block per box, in the bench tables' style.

Rows are a suite (ppl corpus, gsm8k subset, canary) and a setting; with several builds each
candidate build sits beside the baseline with the paired verdict of forklift.stats.quality.
A side that failed shows its failure and a side that never ran says "not run": never a blank.
"""

from __future__ import annotations

from pathlib import Path

from forklift.mdtable import table_text
from forklift.receipts import Receipt
from forklift.report.campaign import builds_oldest_first
from forklift.stats.quality import SuiteRun, compare_pair, headline, suite_runs
from forklift.textsafe import markdown as md

NOTES = {
    "Quality": (
        "ppl: corpus perplexity (token-weighted, from the server's prompt logprobs) and bits per byte; the verdict is "
        'the paired difference B − A with a 95% Student\'s t interval over windows ("no difference" when it '
        "holds zero). gsm8k: exact match on the final number, strict (`#### N`) and flexible (last number); the "
        "verdict is McNemar's exact test on the questions exactly one side got right (p ≥ 0.05: no difference)."
    ),
    "Canaries": "PASS/FAIL with the count of requests that came back exactly right; logscan counts log lines.",
}


def _build_order(runs: list[SuiteRun], baseline: str | None) -> list[str]:
    builds = builds_oldest_first(runs)
    if baseline in builds:
        builds.remove(baseline)
        builds.insert(0, baseline)
    return builds


def _latest(runs: list[SuiteRun], build: str, key: tuple[str, str]) -> SuiteRun | None:
    mine = [r for r in runs if r.build == build and (r.label, r.setting) == key]
    return mine[-1] if mine else None


def _block(runs: list[SuiteRun], builds: list[str]) -> str:
    keys = list(dict.fromkeys((r.label, r.setting) for r in runs))
    if len(builds) == 1:
        body = [[label, setting, headline(_latest(runs, builds[0], (label, setting)))] for label, setting in keys]  # type: ignore[arg-type]
        return table_text(["suite", "setting", builds[0]], body, escape=md)
    out = []
    for build in builds[1:]:
        body = []
        for key in keys:
            old, new = _latest(runs, builds[0], key), _latest(runs, build, key)
            verdict = compare_pair(old, new).verdict if old and new else "not compared: one side not run"
            body.append([*key, headline(old) if old else "not run", headline(new) if new else "not run", verdict])
        out.append(
            f"{md(builds[0])} (old) → {md(build)} (new)\n\n"
            + table_text(["suite", "setting", "old", "new", "verdict"], body, escape=md)
        )
    return "\n\n".join(out)


def sections(receipts: list[tuple[Path, Receipt]], baseline: str | None = None) -> list[str]:
    """Markdown parts: `## Quality` and `## Canaries`, each with a block per box; none when no such receipts."""
    runs = suite_runs(receipts)
    parts = []
    for title, kind in (("Quality", "quality"), ("Canaries", "canary")):
        mine = [r for r in runs if r.receipt.kind == kind]
        if not mine:
            continue
        builds = _build_order(mine, baseline)
        parts += [f"## {title}", NOTES[title]]
        for machine in dict.fromkeys(r.machine_id for r in mine):
            on_box = [r for r in mine if r.machine_id == machine]
            parts += [f"### {md(on_box[0].hostname)}", _block(on_box, builds)]
    return parts
