"""Seeded simulations of a box with the variance structure compare models, vectorised over trials.

A request's log time = prompt cost + per-request noise + run state + boot state + a drift over
the runs of its boot (each boot its own slope) + the side's true change. The statistics applied
are forklift's own (welch_change, judge, the two-stage rule); only the data are simulated.
`python -m tests.stats.simulate` prints every rate docs/statistics.md quotes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from forklift.stats import METRICS, judge, welch_change
from forklift.stats.design import boots_needed, pilot, two_stage_estimate
from forklift.stats.interval import pooled_change

TRIALS = 400
TPOT = next(m for m in METRICS if m.key == "tpot")


def tolerance(trials: int = TRIALS, rate: float = 0.05) -> float:
    """The test level plus three binomial standard errors over `trials`."""
    return rate + 3 * math.sqrt(rate * (1 - rate) / trials)


@dataclass(frozen=True)
class Box:
    """Standard deviations on the log scale (0.02 = 2 %); drift: sd of a boot's slope per run."""

    request: float = 0.02
    run: float = 0.005
    boot: float = 0.01
    drift: float = 0.003
    prompts: int = 32


GPU_BOUND = Box()  # an 8B-shape model on one GPU: small run-to-run, boots differ by about 1 %
HOST_BOUND = Box(request=0.1, run=0.1, boot=0.15, drift=0.05)  # a tiny model: the host's Python sets the pace


def unit_means(rng: np.random.Generator, box: Box, trials: int, boots: int, runs: int, change: float) -> np.ndarray:
    """(trials, boots, runs) mean log value of each run over the prompts (prompt costs cancel: shared by sides)."""
    shape = (trials, boots, runs)
    request = rng.normal(0, box.request, (*shape, box.prompts)).mean(axis=-1)
    slope = rng.normal(0, box.drift, (trials, boots, 1))
    order = np.arange(runs) - (runs - 1) / 2
    boot = rng.normal(0, box.boot, (trials, boots, 1))
    return math.log1p(change) + boot + slope * order + rng.normal(0, box.run, shape) + request


def boot_unit(a: np.ndarray, b: np.ndarray, margin: float = 0.01) -> list[str]:
    """forklift's verdict per trial with the boot as the unit (each boot's mean over its runs)."""
    kinds = []
    for x, y in zip(a.mean(axis=2), b.mean(axis=2), strict=True):
        kinds.append(judge(TPOT, welch_change(x, y, "boot"), margin).kind)
    return kinds


def runs_as_unit(a: np.ndarray, b: np.ndarray, margin: float = 0.01) -> list[str]:
    """The method compare used before: every run a unit, boots ignored (claimable with 2+ runs a side)."""
    kinds = []
    for x, y in zip(a.reshape(len(a), -1), b.reshape(len(b), -1), strict=True):
        kinds.append(judge(TPOT, welch_change(x, y, "run"), margin).kind)
    return kinds


H200_C1 = Box(request=0.005, run=0.001, boot=0.001, drift=0.0005)  # the ship campaign's C1 TPOT, warm boots
H200_C16 = Box(request=0.02, run=0.008, boot=0.004, drift=0.003)  # its C16 TPOT: 16 in flight, power-capped


def campaign_boots(
    box: Box,
    repeats: int,
    changes: tuple[float, ...],
    runs: int = 3,
    trend: float = 0.0,
    seed: int = 5,
    trials: int = TRIALS,
) -> list[np.ndarray]:
    """(trials, boots) boot means of each build of an ABBA campaign (A, B, C, ..., C, B, A per repeat).

    `changes`: each build's true change against the first (0 for A itself). `trend`: sd of a slope per
    boot over the campaign's sequence of boots (the box warming, a neighbour starting), one per trial.
    """
    rng = np.random.default_rng(seed)
    builds = len(changes)
    order = [*range(builds), *reversed(range(builds))] * repeats
    means = unit_means(rng, box, trials, len(order), runs, 0.0).mean(axis=2)
    slope = rng.normal(0, trend, (trials, 1)) * (np.arange(len(order)) - (len(order) - 1) / 2)
    shifted = means + slope + np.log1p(np.array([changes[b] for b in order]))
    return [shifted[:, [i for i, b in enumerate(order) if b == build]] for build in range(builds)]


def pooled_unit(groups: list[np.ndarray], b: int, margin: float = 0.01) -> list[str]:
    """forklift's verdict per trial on build `b` against the first, the boot sd pooled over every build."""
    kinds = []
    for trial in range(groups[0].shape[0]):
        others = [g[trial] for i, g in enumerate(groups) if i not in (0, b)]
        kinds.append(judge(TPOT, pooled_change(groups[0][trial], groups[b][trial], others), margin).kind)
    return kinds


def claim_rate(kinds: list[str]) -> float:
    return sum(k in ("slower", "faster") for k in kinds) / len(kinds)


def rate_of(kinds: list[str], kind: str) -> float:
    return sum(k == kind for k in kinds) / len(kinds)


def across_boots(
    box: Box, boots: int, runs: int, change: float = 0.0, seed: int = 1, trials: int = TRIALS
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return unit_means(rng, box, trials, boots, runs, 0.0), unit_means(rng, box, trials, boots, runs, change)


def sequential(
    box: Box,
    runs: int,
    target: float,
    max_boots: int,
    change: float = 0.0,
    seed: int = 3,
    trials: int = TRIALS,
    pilot_boots: int = 3,
) -> tuple[list[str], list[int]]:
    """The two-stage rule: pilot boots a side, boots added from the pilot's sd alone, the final interval."""
    rng = np.random.default_rng(seed)
    a = unit_means(rng, box, trials, max_boots, runs, 0.0).mean(axis=2)
    b = unit_means(rng, box, trials, max_boots, runs, change).mean(axis=2)
    kinds, used = [], []
    for x, y in zip(a, b, strict=True):
        stage = pilot(x[:pilot_boots], y[:pilot_boots])
        k = boots_needed(stage, target, max_boots)
        kinds.append(judge(TPOT, two_stage_estimate(x[:k], y[:k], stage)).kind)
        used.append(k)
    return kinds, used


def main() -> None:
    print(f"{TRIALS} trials each; tolerance {tolerance():.3f}")
    for name, box in (("GPU-bound", GPU_BOUND), ("host-bound", HOST_BOUND)):
        print(f"{name} box: {box}")
        for boots, runs in ((2, 4), (3, 4), (6, 4)):
            a, b = across_boots(box, boots, runs)
            print(f"  A/A {boots} boots x {runs} runs a side, boot unit: claims {claim_rate(boot_unit(a, b)):.3f}")
        for boots, runs in ((1, 4), (1, 8), (2, 4)):
            a, b = across_boots(box, boots, runs)
            old = claim_rate(runs_as_unit(a, b))
            print(f"  A/A {boots} boot(s) x {runs} runs a side, runs as the unit (old): claims {old:.3f}")
    kinds, used = sequential(GPU_BOUND, runs=4, target=0.02, max_boots=12)
    print(f"two-stage A/A, GPU-bound (target 2%, 3 pilot boots, <= 12): claims {claim_rate(kinds):.3f}, ", end="")
    print(f"mean boots {np.mean(used):.1f}")
    kinds, used = sequential(GPU_BOUND, runs=4, target=0.02, max_boots=12, change=0.03)
    print(f"two-stage, true +3%: slower {rate_of(kinds, 'slower'):.3f}, mean boots {np.mean(used):.1f}")
    tight = Box(request=0.01, run=0.001, boot=0.001, drift=0.0005)
    a, b = across_boots(tight, 4, 4, change=0.001)
    equal = rate_of(boot_unit(a, b), "no practical change")
    print(f"tight box {tight}, true +0.1%, 4 boots x 4 runs: no practical change {equal:.3f}")
    for boots in (3, 4, 6):
        a, b = across_boots(GPU_BOUND, boots, 4, change=0.03)
        print(f"GPU-bound, true +3%, {boots} boots x 4 runs: slower {rate_of(boot_unit(a, b), 'slower'):.3f}")
    print("ABBA campaign of A, noop, slowdown (+3%), boot sd pooled over the three builds:")
    for name, box in (("H200 C1", H200_C1), ("H200 C16", H200_C16), ("GPU-bound", GPU_BOUND)):
        for repeats, trend in ((1, 0.0), (1, 0.002), (2, 0.0)):
            groups = campaign_boots(box, repeats, (0.0, 0.0, 0.03), trend=trend)
            noop, slow = pooled_unit(groups, 1), pooled_unit(groups, 2)
            print(
                f"  {name}, {2 * repeats} boots a side, trend sd {trend:.1%}/boot: noop claims {claim_rate(noop):.3f}, "
                f"no practical change {rate_of(noop, 'no practical change'):.3f}; slowdown slower {rate_of(slow, 'slower'):.3f}"
            )


if __name__ == "__main__":
    main()
