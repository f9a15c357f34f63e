"""The campaign as markdown a reviewer can paste into a PR: summary, paired detail, boots, plots, receipts."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import forklift
from forklift.mdtable import table_text
from forklift.receipts.envelope import setting_label
from forklift.report import numbers
from forklift.report.campaign import Campaign, Row, Side, boot_state
from forklift.report.cells import extra_sections
from forklift.report.control import aa_shift
from forklift.report.quality import sections
from forklift.report.ship import decide, decision_table
from forklift.stats import GroupComparison
from forklift.textsafe import markdown as md

# The summary's verdict: decode speed when measured, else end-to-end latency (a server that
# sends a whole answer in one burst has no TPOT).
SUMMARY_METRICS = ("decode_tps", "e2e")

METHODS = """\
**How to read this.** Each cell and metric is judged over the unit A and B really are: the run when both ran on
one server boot, the boot otherwise (two builds, or two boots of one build, are always two boots). A unit's value
is its mean log value over the prompts every unit measured, so prompt mix cancels; Δ is B over A as a ratio of
geometric means, minus one, and the 95% interval is Welch's t over the units a side, or, where a campaign measured
further builds in the cell, Student's t with the boot-to-boot sd pooled over every build's boots (builds differ
in level, not in how one boot differs from the next; the notes say which, and how many). With one unit a side the interval over the finer unit (runs of one boot, or prompts of one run) is
shown and read "not claimable" unless an A/A control of the missing unit floors it. The verdict judges that
interval against the metric's practical margin (default ±1%): "no practical change" when the whole interval lies
inside ±margin; "B slower/faster by X%" when it excludes zero and is not inside the margin; "undecided" when it
holds zero and the MDE exceeds the margin (the design could not tell); "within noise" otherwise. Higher tok/s and
tok/step are better; lower TTFT, TPOT and E2E are better ("faster" = lower latency). MDE is the smallest true
change this design catches 80% of the time at the 5% level: (t₀.₉₇₅ + t₀.₈₀) × SE with the interval's own degrees
of freedom. Notes give each side's run-to-run and boot-to-boot spread and flag a trend over the runs of a boot.
When both sides decode greedily and a prompt's output hash differs, the texts diverged: tok/step, acceptance
and output-length deltas of that cell are confounded by trajectory. Boxes are never averaged: each is its own row.
"""


def _tok_s(side: Side, cell: str) -> str:
    """Output tok/s of a side's cell, or why there is none."""
    return side.state or numbers.number(side.throughput(cell))


def _pool(side: Side) -> str:
    if side.state:
        return f"none ({side.boot.body.outcome})" if side.boot is not None else "not run"
    return f"{side.pool:,}" if side.pool is not None else "not stated"


def _verdict(row: Row) -> str:
    if row.refused:
        return row.refused
    if row.old.state or row.new.state:
        return "not compared: one side has no numbers"
    if row.result is None:
        return "cell measured on one side only"
    judged = next((m for m in map(row.result.metric, SUMMARY_METRICS) if m and m.estimate), None)
    if judged is None:
        return "no timing on both sides to judge"
    text = f"{judged.label}: {judged.verdict}"
    if row.result.divergence.diverged:
        text += f"; {len(row.result.divergence.diverged)}/{row.result.divergence.compared} prompts diverged"
    return text


def _summary(campaign: Campaign) -> str:
    rows = campaign.rows
    if not rows:
        return "No bench or boot receipts outside the ladders below."
    many_hosts = len({r.host for r in rows}) > 1
    many_workloads = len({r.workload for r in rows}) > 1
    words = ("old", "new") if not campaign.by_setting else ("A", "B")
    lead = (["box"] if many_hosts else []) + ["setting"] + (["workload"] if many_workloads else []) + ["cell"]
    out = []
    with_aa = any(run.receipt.aa for run in campaign.runs)
    if campaign.baseline is None:
        header = [*lead, "tok/s", "KV pool", "tok/step"] + (["A/A shift (2nd vs 1st)"] if with_aa else [])
        body = [
            ([r.host] if many_hosts else [])
            + [r.old.setting]
            + ([r.workload] if many_workloads else [])
            + [r.cell, _tok_s(r.old, r.cell), _pool(r.old), r.old.tok_step(r.cell) if r.old.runs else "–"]
            + ([aa_shift(r.old.runs, r.cell, SUMMARY_METRICS, margins=r.margins) or "–"] if with_aa else [])
            for r in rows
        ]
        lead_line = f"One build ({md(campaign.builds[0])}): numbers only, nothing to compare"
        if with_aa:
            lead_line += " but its A/A control (the build booted twice, aa = 1 and 2; the second against the first)"
        return f"{lead_line}.\n\n" + table_text(header, body, escape=md)
    header = [
        *lead,
        f"{words[0]} tok/s",
        f"{words[1]} tok/s",
        f"{words[0]} pool",
        f"{words[1]} pool",
        "tok/step",
        "verdict",
    ]
    if with_aa:
        header.append(f"A/A shift ({words[0]}, 2nd vs 1st)")
    candidates = list(dict.fromkeys((r.new.build, r.new.setting if campaign.by_setting else "") for r in rows))
    for build, setting in candidates:
        mine = [r for r in rows if r.new.build == build and (not campaign.by_setting or r.new.setting == setting)]
        if campaign.by_setting:
            out.append(f"### {md(campaign.baseline)} (A) → {md(setting)} (B), build {md(build)}")
        else:
            out.append(f"### {md(campaign.baseline)} (old) → {md(build)} (new)")
        body = []
        for r in mine:
            tok_step = "–" if (r.old.state or r.new.state) else f"{r.old.tok_step(r.cell)} → {r.new.tok_step(r.cell)}"
            body.append(
                ([r.host] if many_hosts else [])
                + [r.setting]
                + ([r.workload] if many_workloads else [])
                + [
                    r.cell,
                    _tok_s(r.old, r.cell),
                    _tok_s(r.new, r.cell),
                    _pool(r.old),
                    _pool(r.new),
                    tok_step,
                    _verdict(r),
                ]
                + (
                    [
                        aa_shift(r.old.runs, r.cell, SUMMARY_METRICS, pool=[r.new.runs, *r.pool], margins=r.margins)
                        or "–"
                    ]
                    if with_aa
                    else []
                )
            )
        out.append(table_text(header, body, escape=md))
    caption = (
        "tok/s: output tokens per second of the cell (completion tokens over wall time, kept runs). verdict: the "
        "paired per-prompt change of decode tok/s (1/TPOT), or of E2E latency where the server delivered answers "
        "in bursts (no decode timing). pool: KV cache tokens the server stated. tok/step: 1 + accepted/drafts from the "
        'server\'s speculative-decoding counters ("no spec": counters read, no drafts).'
    )
    if with_aa:
        caption += (
            " A/A shift: the A side benched twice in the campaign (aa = 1 and 2), the second copy against the first, "
            "on decode tok/s, or on E2E where decode has no interval (the metric is named): a change no larger "
            "than it is the box, not the change. Both it and the verdicts pool the boot-to-boot spread of every "
            "build's boots in the cell; a shift claimed here says boots of one build differ (a cold first boot, a "
            "box that drifts), which the pooled interval assumes they do not."
        )
    return "\n\n".join([*out, caption])


def _detail(comparison: GroupComparison) -> str:
    title = (
        f"### {md(numbers.setting(comparison))} · {md(comparison.workload)}: A = {md(comparison.build_a)} on "
        f"{md(comparison.host_a)}, B = {md(comparison.build_b)} on {md(comparison.host_b)}"
    )
    body = [
        [cell.cell, *numbers.metric_cells(result), result.verdict]
        for cell in comparison.cells
        for result in cell.metrics
    ]
    table = table_text(["cell", "metric", "A", "B", "Δ", "95% CI", "MDE", "verdict"], body, escape=md)
    notes = []
    for cell in comparison.cells:
        notes.append(f"- **{md(cell.cell)}**: " + "; ".join(md(note) for note in numbers.cell_notes(cell)))
    notes += [f"- cell {md(name)}: measured by A only" for name in comparison.only_a]
    notes += [f"- cell {md(name)}: measured by B only" for name in comparison.only_b]
    notes += [f"- not a whole receipt: {md(partial)}" for partial in comparison.partial]
    if comparison.across_machines:
        notes.append("- A and B ran on different boxes")
    return "\n\n".join([title, table, "\n".join(notes)])


def _boots(campaign: Campaign) -> str:
    if not campaign.boots:
        return "No boot receipts in this campaign."
    body = []
    for boot in campaign.boots:
        pool = boot.body.facts.kv_pool_tokens
        seconds = boot.body.boot_seconds
        detail = "ready" if boot.body.outcome == "ready" else boot_state(boot)
        body.append(
            [
                numbers.box_name(boot.receipt.fingerprint),
                boot.build,
                boot.setting,
                boot.body.outcome,
                f"{pool:,}" if pool is not None else "not reported",
                f"{seconds:.1f}" if seconds is not None else "–",
                detail,
            ]
        )
    return table_text(["box", "build", "setting", "outcome", "KV pool (tokens)", "boot s", "detail"], body, escape=md)


def _receipts(campaign: Campaign, out_dir: Path) -> str:
    body = []
    for path, receipt in campaign.receipts:
        body.append(
            [
                os.path.relpath(path, out_dir),
                receipt.kind,
                receipt.status,
                receipt.engine_version or "–",
                receipt.overlay_hash[:12] if receipt.overlay_hash else "–",
                setting_label(receipt, absent="–"),
                numbers.box_name(receipt.fingerprint),
                f"{receipt.created:%Y-%m-%d %H:%M:%S}",
            ]
        )
    return table_text(
        ["receipt", "kind", "status", "engine", "overlay", "setting", "box", "created (UTC)"], body, escape=md
    )


def render(campaign: Campaign, images: dict[str, Path], out_dir: Path) -> str:
    hosts = sorted({numbers.box_name(receipt.fingerprint) for _, receipt in campaign.receipts})
    builds = ", ".join(md(b) + (" (baseline)" if b == campaign.baseline else "") for b in campaign.builds)
    builds = builds or "none compared"
    kinds = Counter(receipt.kind for _, receipt in campaign.receipts)

    parts = [
        f"# forklift report: {md(campaign.folder.name)}",
        f"{len(campaign.receipts)} receipts ({', '.join(f'{n} {md(kind)}' for kind, n in sorted(kinds.items()))}) "
        f"from {', '.join(map(md, hosts))}; builds: {builds or 'none compared'}. "
        f"Rendered by forklift {forklift.__version__}.",
    ]
    if campaign.ship is not None:
        parts += ["## Decision", decision_table(decide(campaign, campaign.ship), campaign.baseline)]
    if campaign.rows:
        parts += ["## Summary", _summary(campaign)]
    if campaign.comparisons:
        parts += ["## Paired detail", METHODS, *(_detail(c) for c in campaign.comparisons)]
    parts += sections(campaign.receipts, campaign.baseline if not campaign.by_setting else None)
    parts += ["## Boots", _boots(campaign)]
    parts += extra_sections(campaign.receipts)
    if images:
        parts.append("## Plots")
        parts += [
            f"![{md(title)}]({os.path.relpath(path, out_dir)})" for title, path in images.items()
        ]  # names forklift made
    parts += ["## Receipts", _receipts(campaign, out_dir)]
    return "\n\n".join(parts) + "\n"
