"""How numbers are written, shared by the terminal tables and the markdown report."""

from __future__ import annotations

from forklift.receipts import Fingerprint
from forklift.stats import CellResult, GroupComparison, MetricResult
from forklift.stats.design import target_note
from forklift.stats.sample import TtftSplit
from forklift.stats.verdict import interval_phrase, not_claimable_reason, signed_percent


def box_name(fingerprint: Fingerprint) -> str:
    """A box as a reader tells it apart: hostname plus its GPUs, else its CPU count.

    Hostnames repeat across VMs (a GPU host and a 2-core CPU box can both be "vm").
    """
    if fingerprint.gpus:
        return f"{fingerprint.hostname} ({', '.join(fingerprint.gpus)})"
    return f"{fingerprint.hostname} ({fingerprint.cpu_count} CPUs)"


def number(value: float | None) -> str:
    """Three significant-ish digits; a missing value is a dash, never a zero."""
    if value is None:
        return "–"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def change(result: MetricResult) -> str:
    return "–" if result.estimate is None else signed_percent(result.estimate.change)


def interval(result: MetricResult) -> str:
    est = result.estimate
    return "–" if est is None else f"{signed_percent(est.low)}..{signed_percent(est.high)}"


def mde(result: MetricResult) -> str:
    est = result.estimate
    return "–" if est is None or est.mde is None else f"±{est.mde * 100:.1f}%"


def label(result: MetricResult) -> str:
    shown_unit = result.unit and result.unit not in result.label
    return f"{result.label} ({result.unit})" if shown_unit else result.label


def metric_cells(result: MetricResult) -> list[str]:
    """metric, A, B, Δ, 95% CI, MDE: the numeric columns of a paired table row."""
    return [label(result), number(result.a), number(result.b), change(result), interval(result), mde(result)]


def setting(comparison: GroupComparison) -> str:
    same = comparison.setting_a == comparison.setting_b
    return comparison.setting_a if same else f"{comparison.setting_a} → {comparison.setting_b}"


def pairing(paired: bool, pairs: int, requests_a: int, requests_b: int) -> str:
    if paired:
        alone = (
            f" (left out, no partner: A {requests_a - pairs}, B {requests_b - pairs})"
            if (requests_a > pairs or requests_b > pairs)
            else ""
        )
        return f"paired by prompt: {pairs} pairs{alone}"
    return f"unpaired (prompts differ: {pairs} shared ids; A {requests_a}, B {requests_b} requests)"


def headline(cell: CellResult) -> MetricResult | None:
    """The metric a cell's notes describe its design by: the first with an interval."""
    return next((m for m in cell.metrics if m.estimate is not None), None)


def ttft_split(split: TtftSplit | None) -> str:
    """Where the engine's first token went: its queue, its prefill step, and the frontend around them."""
    if split is None:
        return "not read"
    return (
        f"{split.ttft_ms:.1f} ms = queue {split.queue_ms:.1f} + prefill {split.prefill_ms:.1f} "
        f"+ frontend {split.frontend_ms:.1f}"
    )


def cell_notes(cell: CellResult) -> list[str]:
    """What a reader needs beside a cell's table: pairing, throughput, divergence, determinism, caveats."""
    first = headline(cell)
    design = [f"{first.label} {interval_phrase(first.estimate)}"] if first and first.estimate else []
    if first and first.components_a and first.components_b:
        design.append(f"{first.label} units: A {first.components_a.summary()}; B {first.components_b.summary()}")
    notes = [
        "; ".join([pairing(cell.paired, cell.pairs, cell.requests_a, cell.requests_b), *design])
        + f"; output tok/s (cell, no interval): A {number(cell.throughput_a)}, B {number(cell.throughput_b)}",
        cell.divergence.summary,
        f"A {cell.determinism_a.summary}; B {cell.determinism_b.summary}",
    ]
    if cell.server_tok_step_a or cell.server_tok_step_b:
        notes.append(
            f"server tok/step (counter delta, no interval): A {number(cell.server_tok_step_a)}, "
            f"B {number(cell.server_tok_step_b)}"
        )
    if cell.server_ttft_a or cell.server_ttft_b:
        notes.append(f"vLLM's TTFT mean: A {ttft_split(cell.server_ttft_a)}; B {ttft_split(cell.server_ttft_b)}")
    if cell.bursts_a or cell.bursts_b:
        unlike = [m.label for m in cell.metrics if m.decision.unlike]
        notes.append(
            f"delivered in one burst: A {cell.bursts_a}/{cell.requests_a}, B {cell.bursts_b}/{cell.requests_b} "
            "requests (left out of TPOT and decode tok/s: their chunk spacing measures delivery, not decoding)"
            + (f"; {', '.join(unlike)} undecided: the shares differ beyond chance" if unlike else "")
        )
    floor = next((m.estimate for m in cell.metrics if m.estimate and m.estimate.floor is not None), None)
    if floor is not None:
        widened = [m.label for m in cell.metrics if m.estimate and m.estimate.widened]
        notes.append(
            "A/A floor applied (bench-to-bench spread of one build on this box)"
            + (f"; it widened: {', '.join(widened)}" if widened else "; no interval was narrower than it")
        )
    short = next((m.estimate for m in cell.metrics if m.estimate and not m.estimate.claimable), None)
    if short is not None:
        notes.append(f"not claimable: {not_claimable_reason(short)}")
    drifting = [
        f"{m.label} on {side}"
        for m in cell.metrics
        for side, comps in (("A", m.components_a), ("B", m.components_b))
        if comps and comps.drifting
    ]
    if drifting:
        notes.append(
            f"trend within a boot (runs drift, p < 0.05): {', '.join(drifting)}; "
            "interleave the builds (ABBA) so drift lands on both sides"
        )
    for side, flags in (("A", cell.gpu_flags_a), ("B", cell.gpu_flags_b)):
        if flags:
            notes.append(f"GPU state on {side}: " + "; ".join(flags))
    if cell.failed_a or cell.failed_b:
        notes.append(f"failed requests: A {cell.failed_a}, B {cell.failed_b} (left out of pairs)")
    return notes


def target_notes(cell: CellResult, target: float) -> list[str]:
    """compare --target-mde: per metric with an interval, this design's MDE and what reaching `target` needs."""
    return [f"{m.label}: {target_note(m.estimate, target)}" for m in cell.metrics if m.estimate is not None]
