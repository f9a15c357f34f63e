"""GPU state per run: flag a kept run whose GPU ran unlike its neighbours (throttled, or at another clock).

Throttling most runs share (an H200 at its power cap through a whole cell) is said once, not run by run.

A GPU-bound step's time follows the SM clock: a run at a clock 5 % off the others is a run of
another machine, whatever its requests say. The bench records, per run, each GPU's median SM and
memory clocks and every throttle reason seen (forklift.bench.schema: Cell.run_facts[].gpus[]);
this reads them and says which runs to distrust. It changes no interval: it tells the reader why
one may be wide or shifted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from statistics import median
from typing import Protocol

from forklift.stats.sample import BenchRun

CLOCK_TOLERANCE = 0.05


class GpuReading(Protocol):
    """The fields of one GPU's state over one run that this module reads."""

    index: int
    sm_clock_mhz: float | None
    memory_clock_mhz: float | None
    throttle_reasons: list[str]


def gpu_flags(runs: Sequence[tuple[str, Sequence[GpuReading]]], tolerance: float = CLOCK_TOLERANCE) -> list[str]:
    """What the reader should know of the runs' GPUs: 'GPU i: 12 of 12 runs throttled (why)' for throttling most
    runs shared (a box at its power cap: both sides may be), then 'run NAME GPU i: why' for each run whose
    throttling was not the most runs' or whose clock was off the runs' median by > tolerance."""
    clocks: dict[tuple[int, str], list[float]] = {}
    reasons: dict[int, Counter[tuple[str, ...]]] = {}
    for _, gpus in runs:
        for gpu in gpus:
            reasons.setdefault(gpu.index, Counter())[tuple(sorted(gpu.throttle_reasons))] += 1
            for name, value in (("SM", gpu.sm_clock_mhz), ("memory", gpu.memory_clock_mhz)):
                if value:
                    clocks.setdefault((gpu.index, name), []).append(value)
    middle = {key: median(values) for key, values in clocks.items() if len(values) >= 2}
    # the reasons most runs share (on a tie, none): what "unlike the other runs" is measured against
    usual = {index: max(counts, key=lambda why: (counts[why], not why)) for index, counts in reasons.items()}
    flags = [
        f"GPU {index}: {reasons[index][why]} of {reasons[index].total()} runs throttled ({', '.join(why)})"
        for index, why in sorted(usual.items())
        if why and reasons[index].total() > 1
    ]
    for label, gpus in runs:
        for gpu in gpus:
            seen = tuple(sorted(gpu.throttle_reasons))
            common = usual[gpu.index] if reasons[gpu.index].total() > 1 else ()
            why = []
            if seen != common:
                why.append(f"throttled ({', '.join(seen)})" if seen else "not throttled")
            for name, value in (("SM", gpu.sm_clock_mhz), ("memory", gpu.memory_clock_mhz)):
                centre = middle.get((gpu.index, name))
                if value and centre and abs(value / centre - 1) > tolerance:
                    why.append(f"{name} clock {value:.0f} MHz vs median {centre:.0f} ({value / centre - 1:+.0%})")
            if why:
                flags.append(f"run {label} GPU {gpu.index}: {'; '.join(why)}")
    return flags


def cell_gpu_runs(runs: list[BenchRun], cell_name: str) -> list[tuple[str, Sequence[GpuReading]]]:
    """Each kept run of a cell that recorded GPU state, labelled 'receipt-id#run'."""
    out: list[tuple[str, Sequence[GpuReading]]] = []
    for run in runs:
        cell = run.cell(cell_name)
        if cell is None:
            continue
        kept = set(run.kept_runs(cell_name))
        for facts in getattr(cell, "run_facts", None) or []:  # recorded by benches that sample the GPU
            if facts.run in kept and facts.gpus:
                out.append((f"{run.receipt.id}#{facts.run}", facts.gpus))
    return out
