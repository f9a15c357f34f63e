"""The ship decision: campaign.toml's [ship] gates judged over a campaign's receipts -> SHIP, HOLD or UNDECIDED.

A gate names a metric, the cells (and settings) it reads, and how much worse the candidate may be
than the baseline (`worse`, in percent). Each candidate build is judged against the baseline, gate
by gate, with the interval compare computed over the campaign's boots:

- pass: the interval's worse end lies within the allowance (B is shown no worse than that);
- hold: the interval lies wholly beyond the allowance, or the design could see a change that
  size (MDE <= allowance) and the interval still reaches past it;
- undecided: neither, because the design cannot tell (MDE > allowance), the interval is not
  claimable (too few boots a side), the host delivered one side's answers in bursts and not the
  other's (a TTFT or E2E interval then measures the host: forklift.stats.bursts), or the gate found
  nothing to read. Never a silent pass.

Quality gates read the same rule: `perplexity` over the quality receipts' ppl windows, paired by window
(forklift.stats.quality.ppl_change; the MDE from the windows' spread), and `divergence` over the bench cells'
greedy output hashes, the share of prompts whose text changed with its exact 95% (Clopper-Pearson) interval.
`slo_capacity` reads levels, not an interval of a change: each build's highest sweep cell meeting the bench
suite's SLO at p99, from every boot's cell verdicts (forklift.bench.slo.capacity; _slo_results states the rule).

A build ships when every gate passes; any hold holds it; otherwise it is undecided.
The gates travel in the campaign's plan receipt, so `forklift report` decides from receipts alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from scipy import stats

from forklift.errors import ConfigError, ForkliftError
from forklift.launch.schema import CgroupMemory
from forklift.mdtable import table
from forklift.quality.schema import Window
from forklift.stats.interval import LEVEL, minimum_detectable_effect
from forklift.stats.metrics import METRICS
from forklift.stats.quality import PplResult, SuiteRun, ppl_change, suite_runs
from forklift.stats.runs import build_label
from forklift.textsafe import markdown

if TYPE_CHECKING:
    from forklift.report.campaign import Campaign

Outcome = Literal["pass", "hold", "undecided"]
Decision = Literal["SHIP", "HOLD", "UNDECIDED"]
EXIT_CODES: dict[Decision, int] = {"SHIP": 0, "HOLD": 1, "UNDECIDED": 3}

BENCH_METRICS = {m.key: m for m in METRICS if m.better is not None}
OTHER_METRICS = {
    "kv_pool": "KV pool tokens the boot reported (fewer: the build holds more memory)",
    "canaries": "every quality and canary receipt of the candidate passed (needle exact, tools, json, ...)",
    "perplexity": "corpus perplexity (ppl suite), paired over windows",
    "divergence": "share of greedy prompts whose text differs from the baseline's (bench cells)",
    "shipped_defaults_boot": "each profile as shipped (no --set; campaign shipped_defaults = true) booted ready",
    "memory_events": "every boot of the candidate ran in its memory cgroup with no high, max, oom or oom_kill event",
    "slo_capacity": "the highest load whose p99s meet the bench suite's slo is no lower than the baseline's",
}
PLAN_KIND = "campaign-plan"


class Gate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: str = Field(
        description="decode_tps, tpot, ttft, e2e (bench cells), kv_pool, canaries, memory_events, "
        "shipped_defaults_boot, slo_capacity, perplexity or divergence"
    )
    worse: float = Field(default=0.0, ge=0, description="percent the candidate may be worse than the baseline")
    cells: list[str] | None = Field(default=None, description="bench cells it reads (default: every cell)")
    settings: list[str] | None = Field(default=None, description="settings it reads (default: every setting)")

    @field_validator("metric")
    @classmethod
    def _known(cls, metric: str) -> str:
        known = [*BENCH_METRICS, *OTHER_METRICS]
        if metric not in known:
            raise ValueError(f"unknown metric {metric!r} (known: {', '.join(known)})")
        return metric

    @model_validator(mode="after")
    def _levels_read_whole_sweeps(self) -> Gate:
        if self.metric == "slo_capacity" and (self.worse or self.cells is not None):
            raise ValueError("slo_capacity compares whole sweeps level by level: it takes no worse or cells")
        return self

    @field_validator("worse", mode="before")
    @classmethod
    def _percent(cls, value: object) -> object:
        return value.strip().removesuffix("%") if isinstance(value, str) else value

    @property
    def title(self) -> str:
        where = f" {','.join(self.cells)}" if self.cells else ""
        if self.metric == "canaries":
            return "canaries pass"
        if self.metric == "shipped_defaults_boot":
            return "shipped defaults boot"
        if self.metric == "memory_events":
            return "no memory cgroup events"
        if self.metric == "slo_capacity":
            return "highest load meeting the SLO no lower"
        if self.metric == "divergence":
            return f"greedy divergence{where} at most {self.worse:g}% of prompts"
        label = BENCH_METRICS[self.metric].label if self.metric in BENCH_METRICS else self.metric
        return f"{label}{where} no worse than {self.worse:g}%"


class ShipSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    baseline: str | None = Field(
        default=None, description="the build every other is judged against (default: the first)"
    )
    gates: list[Gate] = Field(default_factory=list)
    add_boots: bool | None = Field(
        default=None,
        description="true: after the planned boots, add whole repeats (within the campaign's budget) until each "
        "bench gate's MDE is within its allowance: a gate that can decide is not left undecided for want of boots; "
        "false: a fixed design, the planned boots and no more (a suite's target_mde adds none either); "
        "unset: only a suite's target_mde adds boots",
    )


@dataclass(frozen=True)
class GateResult:
    build: str
    gate: Gate
    where: str  # setting / cell, or "boots" / "suites"
    outcome: Outcome
    evidence: str


@dataclass(frozen=True)
class BuildDecision:
    build: str
    decision: Decision
    results: list[GateResult]

    @property
    def holding(self) -> list[GateResult]:
        return [r for r in self.results if r.outcome == "hold"]


def overall(decisions: list[BuildDecision]) -> Decision:
    kinds = {d.decision for d in decisions}
    return "HOLD" if "HOLD" in kinds else "UNDECIDED" if "UNDECIDED" in kinds or not decisions else "SHIP"


def judge_interval(
    change: float, low: float, high: float, mde: float | None, claimable: bool, higher_better: bool, allowance: float
) -> Outcome:
    """One gate on one interval (fractions; change = B/A - 1), by the rule in the module docstring."""
    # as "how much worse": positive is worse whichever direction the metric prefers
    worst, best = (-low, -high) if higher_better else (high, low)
    if not claimable:
        return "undecided"
    if worst <= allowance:
        return "pass"
    if best > allowance:
        return "hold"
    if mde is None or mde > allowance:
        return "undecided"
    return "hold"


def check_gates(spec: ShipSpec, builds: list[str], where: str) -> None:
    """A baseline that is not a build is one line (gate metrics are checked when the table is read)."""
    if spec.baseline is not None and spec.baseline not in builds:
        raise ConfigError(f"{where}: ship.baseline = {spec.baseline!r}: not a build (builds: {', '.join(builds)})")


def _pct(value: float) -> str:
    return f"{value * 100:+.1f}%"


def _bench_results(campaign: Campaign, baseline: str, build: str, gate: Gate) -> list[GateResult]:
    metric = BENCH_METRICS[gate.metric]
    allowance = gate.worse / 100.0
    out = []
    for row in campaign.rows:
        if (row.old.build, row.new.build) != (baseline, build):
            continue
        if (gate.cells and row.cell not in gate.cells) or (gate.settings and row.new.setting not in gate.settings):
            continue
        where = f"{row.setting} / {row.cell}"
        found = row.result.metric(gate.metric) if row.result is not None else None
        estimate = found.estimate if found is not None else None
        if estimate is None:
            why = row.refused or row.new.state or row.old.state or f"no {metric.label} interval on both sides"
            out.append(GateResult(build, gate, where, "undecided", why))
            continue
        outcome = judge_interval(
            estimate.change,
            estimate.low,
            estimate.high,
            estimate.mde,
            estimate.claimable,
            metric.better == "higher",
            allowance,
        )
        mde = f"MDE ±{estimate.mde * 100:.1f}%" if estimate.mde is not None else "MDE not estimable"
        claim = "" if estimate.claimable else "; not claimable: too few units a side"
        evidence = (
            f"Δ {_pct(estimate.change)}, CI {_pct(estimate.low)}..{_pct(estimate.high)}, allowed {gate.worse:g}% worse, "
            f"{mde}, {estimate.n_a}/{estimate.n_b} {estimate.unit}s{claim}"
        )
        unlike = found.decision.unlike if found is not None else None
        if unlike is not None:  # the interval is shown, but it is the host's: never a hold or a pass on it
            outcome, evidence = "undecided", f"{unlike}; {evidence}"
        elif found is not None and found.confounded:  # other text on each side: another trajectory, not the engine
            drift = row.result.divergence if row.result is not None else None
            count = f"{len(drift.diverged)}/{drift.compared}" if drift is not None else "some"
            outcome = "undecided"
            evidence = (
                f"texts diverged on {count} greedy prompts: a {metric.label} delta there is no regression; {evidence}"
            )
        out.append(GateResult(build, gate, where, outcome, evidence))
    return out or [GateResult(build, gate, ",".join(gate.cells or ["every cell"]), "undecided", "nothing measured")]


def _ppl_results(campaign: Campaign, baseline: str, build: str, gate: Gate) -> list[GateResult]:
    """Each setting and corpus: the candidate's perplexity against the baseline's over the windows both scored.

    A build's boots each score the same windows; a window's logprob is their mean (greedy scoring on one box
    repeats exactly, so this only matters where it does not)."""
    sides: dict[tuple[str, str], dict[str, list[SuiteRun]]] = {}
    for run in suite_runs(campaign.receipts):
        wanted = run.body.suite == "ppl" and run.build in (baseline, build)
        if wanted and (not gate.settings or run.setting in gate.settings):
            sides.setdefault((run.setting, run.label), {}).setdefault(run.build, []).append(run)
    out = []
    for (setting, label), runs in sides.items():
        where = f"{setting} / {label}"
        failed = [r for r in runs.get(baseline, []) + runs.get(build, []) if not r.body.passed]
        if failed or baseline not in runs or build not in runs:
            why = f"{failed[0].build}: {failed[0].body.failure}" if failed else "no ppl receipt of both builds"
            out.append(GateResult(build, gate, where, "undecided", why))
            continue
        try:
            result = ppl_change(pooled_windows(runs[baseline]), pooled_windows(runs[build]))
        except ForkliftError as exc:
            out.append(GateResult(build, gate, where, "undecided", str(exc)))
            continue
        out.append(_ppl_result(build, gate, where, result))
    return out or [GateResult(build, gate, "suites", "undecided", "no ppl receipt of both builds")]


def _ppl_result(build: str, gate: Gate, where: str, result: PplResult) -> GateResult:
    values = f"{result.ppl_a:.4f} → {result.ppl_b:.4f}"
    if result.identical:
        return GateResult(build, gate, where, "pass", f"{values}: identical on all {result.windows} windows")
    if result.low is None or result.high is None or result.standard_error is None:
        return GateResult(build, gate, where, "undecided", f"{values}: one window, no interval")
    base = result.ppl_a
    mde = minimum_detectable_effect(result.standard_error / base, result.windows - 1)
    change, low, high = result.delta / base, result.low / base, result.high / base
    outcome = judge_interval(change, low, high, mde, True, False, gate.worse / 100.0)
    evidence = (
        f"{values}, Δ {_pct(change)}, CI {_pct(low)}..{_pct(high)}, allowed {gate.worse:g}% worse, "
        f"MDE ±{mde * 100:.2f}%, {result.windows} windows paired"
    )
    return GateResult(build, gate, where, outcome, evidence)


def pooled_windows(runs: list[SuiteRun]) -> list[Window]:
    """One window per id: its logprob sum averaged over the receipts that scored it with the same tokens."""
    by_id: dict[str, list[Window]] = {}
    for run in runs:
        for item in run.body.items:
            window = Window.model_validate(item)
            by_id.setdefault(window.id, []).append(window)
    pooled = []
    for found in by_id.values():
        same = [w for w in found if w.tokens == found[0].tokens and w.logprob_sum is not None]
        if same:
            mean = sum(w.logprob_sum or 0.0 for w in same) / len(same)
            pooled.append(found[0].model_copy(update={"logprob_sum": mean}))
    return pooled


def _divergence_results(campaign: Campaign, baseline: str, build: str, gate: Gate) -> list[GateResult]:
    """Per bench cell: of the prompts sent greedy to both builds, how many came back as other text."""
    allowance = gate.worse / 100.0
    out = []
    for row in campaign.rows:
        if (row.old.build, row.new.build) != (baseline, build) or row.result is None:
            continue
        if (gate.cells and row.cell not in gate.cells) or (gate.settings and row.new.setting not in gate.settings):
            continue
        where = f"{row.setting} / {row.cell}"
        drift = row.result.divergence
        if not drift.assessed or not drift.compared:
            out.append(GateResult(build, gate, where, "undecided", drift.summary))
            continue
        diverged, n = len(drift.diverged), drift.compared
        low, high = stats.binomtest(diverged, n).proportion_ci(confidence_level=LEVEL)
        floor = stats.binomtest(0, n).proportion_ci(confidence_level=LEVEL).high  # the share 0 of n cannot rule out
        outcome: Outcome = "pass" if high <= allowance else "hold" if low > allowance else "undecided"
        evidence = (
            f"{diverged}/{n} prompts diverged ({diverged / n:.0%}, 95% CI {low:.0%}..{high:.0%}), allowed "
            f"{gate.worse:g}%; with {n} prompts a share under {floor:.0%} can read 0"
        )
        out.append(GateResult(build, gate, where, outcome, evidence))
    return out or [GateResult(build, gate, ",".join(gate.cells or ["every cell"]), "undecided", "nothing measured")]


def _pool_results(campaign: Campaign, baseline: str, build: str, gate: Gate) -> list[GateResult]:
    out, seen = [], set()
    for row in campaign.rows:
        if (row.old.build, row.new.build) != (baseline, build) or row.new.setting in seen:
            continue
        if gate.settings and row.new.setting not in gate.settings:
            continue
        seen.add(row.new.setting)
        old, new = row.old.pool, row.new.pool
        if old is None or new is None:
            out.append(GateResult(build, gate, row.setting, "undecided", "a side reported no KV pool"))
            continue
        change = new / old - 1.0
        outcome: Outcome = "pass" if -change <= gate.worse / 100.0 else "hold"
        out.append(GateResult(build, gate, row.setting, outcome, f"{old:,} → {new:,} tokens ({_pct(change)}), exact"))
    return out or [GateResult(build, gate, "boots", "undecided", "no boot of both builds")]


def _memory_result(campaign: Campaign, build: str, gate: Gate) -> GateResult:
    """Fail closed: a boot outside a memory cgroup, or one whose cgroup was never read, is no evidence."""
    boots = [r for _, r in campaign.receipts if r.kind == "boot" and build_label(r) == build]
    readings = [CgroupMemory.model_validate(r.body["memory"]) for r in boots if r.body.get("memory")]
    if not boots or len(readings) < len(boots):
        missing = len(boots) - len(readings)
        return GateResult(build, gate, "boots", "undecided", f"{missing} of {len(boots)} boots had no memory cgroup")
    events: dict[str, int] = {}
    for reading in readings:
        for name, count in reading.incidents().items():
            events[name] = events.get(name, 0) + count
    peak = max(reading.peak_bytes or 0 for reading in readings) / 2**30
    if events:
        counts = ", ".join(f"{name} {count}" for name, count in sorted(events.items()))
        return GateResult(build, gate, "boots", "hold", f"{counts} over {len(readings)} boots; peak {peak:.2f} GiB")
    return GateResult(build, gate, "boots", "pass", f"{len(readings)} boots, no event; peak {peak:.2f} GiB")


def _shipped_results(campaign: Campaign, build: str, gate: Gate) -> list[GateResult]:
    """Each profile as its users run it: never booted is no evidence (undecided), a boot that failed holds."""
    shipped: dict[str, str] = (campaign.plan or {}).get("shipped_defaults") or {}
    if not shipped:
        return [GateResult(build, gate, "settings", "undecided", "the campaign did not set shipped_defaults = true")]
    out = []
    for profile, setting in shipped.items():
        boots = [
            r for _, r in campaign.receipts if r.kind == "boot" and build_label(r) == build and r.setting == setting
        ]
        failed = [r for r in boots if r.body.get("outcome") != "ready"]
        if not boots:
            out.append(GateResult(build, gate, setting, "undecided", f"profile {profile} as shipped was never booted"))
        elif failed:
            fatal = (failed[0].body.get("facts") or {}).get("fatal") or failed[0].body.get("outcome")
            out.append(GateResult(build, gate, setting, "hold", f"{len(failed)} of {len(boots)} boots failed: {fatal}"))
        else:
            out.append(GateResult(build, gate, setting, "pass", f"{len(boots)} of {len(boots)} boots ready"))
    return out


def _pooled_verdicts(found: list[dict[str, Any]]) -> list[str]:
    """One verdict per cell over a build's boots: meets where every boot met it, misses where one missed it."""
    out = []
    for rows in zip(*(capacity["cells"] for capacity in found), strict=True):
        verdicts = {row["verdict"] for row in rows}
        out.append("misses" if "misses" in verdicts else "meets" if verdicts == {"meets"} else "undecided")
    return out


def _capacity_range(verdicts: list[str]) -> tuple[int, int]:
    """How many cells, lightest first, the build surely meets (the run of meets ends at the first cell not
    shown to meet) and at most can (a run reaches no further than the first cell shown to miss)."""
    low = next((i for i, v in enumerate(verdicts) if v != "meets"), len(verdicts))
    high = next((i for i, v in enumerate(verdicts) if v == "misses"), len(verdicts))
    return low, high


def _slo_results(campaign: Campaign, baseline: str, build: str, gate: Gate) -> list[GateResult]:
    """Per setting and sweep (its bounds and cells): the candidate's highest load meeting the SLO against the
    baseline's, as levels of the sweep. Pass when the candidate's surely-met level reaches the baseline's
    highest possible one, hold when the candidate's highest possible one is below the baseline's surely-met
    one, else undecided (an undecided cell where it matters)."""
    found: dict[tuple[str, str, tuple[str, ...]], dict[str, list[dict[str, Any]]]] = {}
    for run in campaign.runs:
        slo = run.body.slo_capacity
        if slo is None or run.build not in (baseline, build) or (gate.settings and run.setting not in gate.settings):
            continue
        bounds = ", ".join(f"{name} ≤ {bound:g} ms" for name, bound in slo["bounds_ms"].items())
        key = (run.setting, bounds, tuple(row["cell"] for row in slo["cells"]))
        found.setdefault(key, {}).setdefault(run.build, []).append(slo)
    out = []
    for (setting, bounds, cells), sides in found.items():
        where = f"{setting} / {bounds}"
        if baseline not in sides or build not in sides:
            out.append(GateResult(build, gate, where, "undecided", "no slo_capacity of both builds on this sweep"))
            continue
        levels, said = {}, []
        for side in (baseline, build):
            verdicts = _pooled_verdicts(sides[side])
            levels[side] = _capacity_range(verdicts)
            low, high = levels[side]
            named = ["none", *cells]
            reach = named[low] if low == high else f"{named[low]}..{named[high]}"
            shown = ", ".join(f"{c} {v}" for c, v in zip(cells, verdicts, strict=True))
            said.append(f"{side} {reach} ({shown}; {len(sides[side])} boots)")
        (base_low, base_high), (new_low, new_high) = levels[baseline], levels[build]
        outcome: Outcome = "pass" if new_low >= base_high else "hold" if new_high < base_low else "undecided"
        out.append(GateResult(build, gate, where, outcome, "highest meeting: " + "; ".join(said)))
    return out or [
        GateResult(build, gate, "bench", "undecided", "no bench receipt with slo_capacity (a bench suite's slo = ...)")
    ]


def _canary_results(campaign: Campaign, build: str, gate: Gate) -> list[GateResult]:

    mine = [r for _, r in campaign.receipts if r.kind in ("quality", "canary") and build_label(r) == build]
    if not mine:
        return [GateResult(build, gate, "suites", "undecided", "no quality or canary receipt of this build")]
    failed = [r for r in mine if r.status != "ok"]
    if failed:
        names = ", ".join(sorted({str(r.body.get("suite") or r.kind) for r in failed}))
        return [GateResult(build, gate, "suites", "hold", f"{len(failed)} of {len(mine)} not ok: {names}")]
    return [GateResult(build, gate, "suites", "pass", f"{len(mine)} of {len(mine)} ok")]


def decide(campaign: Campaign, spec: ShipSpec) -> list[BuildDecision]:
    """Every candidate build against the baseline, gate by gate."""
    baseline = spec.baseline or campaign.baseline
    if baseline is None:
        return []
    decisions = []
    for build in campaign.builds:
        if build == baseline:
            continue
        results: list[GateResult] = []
        for gate in spec.gates:
            if gate.metric in BENCH_METRICS:
                results += _bench_results(campaign, baseline, build, gate)
            elif gate.metric == "kv_pool":
                results += _pool_results(campaign, baseline, build, gate)
            elif gate.metric == "shipped_defaults_boot":
                results += _shipped_results(campaign, build, gate)
            elif gate.metric == "memory_events":
                results.append(_memory_result(campaign, build, gate))
            elif gate.metric == "slo_capacity":
                results += _slo_results(campaign, baseline, build, gate)
            elif gate.metric == "perplexity":
                results += _ppl_results(campaign, baseline, build, gate)
            elif gate.metric == "divergence":
                results += _divergence_results(campaign, baseline, build, gate)
            else:
                results += _canary_results(campaign, build, gate)
        outcomes = {r.outcome for r in results}
        decision: Decision = (
            "HOLD" if "hold" in outcomes else "UNDECIDED" if "undecided" in outcomes or not results else "SHIP"
        )
        decisions.append(BuildDecision(build, decision, results))
    return decisions


def decision_lines(decisions: list[BuildDecision], baseline: str | None) -> list[str]:
    """What `forklift campaign` prints at its end: every gate with its evidence, then one line per build."""
    out = [
        f"  {r.outcome.upper():9} {d.build}: {r.gate.title} at {r.where}: {r.evidence}"
        for d in decisions
        for r in d.results
    ]
    for d in decisions:
        held = "; ".join(f"{r.gate.title} at {r.where}" for r in d.holding)
        undecided = "; ".join(f"{r.gate.title} at {r.where}" for r in d.results if r.outcome == "undecided")
        why = f" (held by {held})" if held else f" (undecided: {undecided})" if undecided else ""
        out.append(f"{d.build} vs {baseline}: {d.decision}{why}")
    out.append(f"decision: {overall(decisions)}")
    return out


def decision_table(decisions: list[BuildDecision], baseline: str | None) -> str:
    """The report's opening: the decision per build, and every gate with its evidence."""

    if not decisions:
        return "No [ship] gates judged: one build, or no gates in the campaign."
    head = f"**{overall(decisions)}** — " + ", ".join(f"{markdown(d.build)}: **{d.decision}**" for d in decisions)
    rows = [[d.build, r.gate.title, r.where, r.outcome.upper(), r.evidence] for d in decisions for r in d.results]
    lines = table(["build", "gate", "where", "outcome", "evidence"], rows, escape=markdown)
    return head + f" (each against {markdown(baseline)})\n\n" + "\n".join(lines)
