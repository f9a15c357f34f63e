"""How numbers are written, shared by the terminal tables and the markdown report."""

from __future__ import annotations

from forklift.stats import MetricResult


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


def signed_percent(value: float) -> str:
    return f"{value * 100:+.1f}%"


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


def pairing(paired: bool, pairs: int, requests_a: int, requests_b: int) -> str:
    if paired:
        return f"paired by prompt: {pairs} pairs"
    return f"unpaired bootstrap (prompts differ: {pairs} shared ids; A {requests_a}, B {requests_b} requests)"
