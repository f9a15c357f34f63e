"""The A/A control: the same build and setting benched twice in one campaign (aa = 1 and 2), compared.

Its shift is what the box alone moves a number by in this campaign; an A/B change no larger than
it is not a finding, whatever its interval says. Computed by stats' own compare_groups.
"""

from __future__ import annotations

from forklift.errors import ForkliftError
from forklift.stats import BenchRun, Margins, compare_groups


def aa_groups(runs: list[BenchRun]) -> tuple[list[BenchRun], list[BenchRun]]:
    return [r for r in runs if r.receipt.aa == 1], [r for r in runs if r.receipt.aa == 2]


def aa_shift(
    runs: list[BenchRun],
    cell: str,
    metrics: tuple[str, ...],
    seed: int = 0,
    pool: list[list[BenchRun]] | None = None,
    margins: Margins | None = None,
) -> str | None:
    """'E2E: within noise (Δ +2.1%, CI -1.0%..+5.3%, margin ±1.0%)' for the first metric judged, or None.

    `pool`: the campaign's other builds in this cell (one list each): with one boot a copy, their boots
    give the boot-to-boot sd the two copies cannot (forklift.stats.interval.pooled_change)."""
    first, second = aa_groups(runs)
    if not (first and second):
        return None
    try:
        comparison = compare_groups(first, second, seed=seed, margins=margins, pool_runs=pool)
    except ForkliftError as refused:
        return f"not compared: {refused}"
    result = next((c for c in comparison.cells if c.cell == cell), None)
    judged = next((m for m in map(result.metric, metrics) if m and m.estimate), None) if result else None
    if judged is None:
        return None
    return f"{judged.label}: {judged.verdict}"
