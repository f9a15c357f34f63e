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

A build ships when every gate passes; any hold holds it; otherwise it is undecided.
The gates travel in the campaign's plan receipt, so `forklift report` decides from receipts alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from forklift.errors import ConfigError
from forklift.launch.schema import CgroupMemory
from forklift.mdtable import table
from forklift.stats.metrics import METRICS
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
    "canaries": "every quality and canary receipt of the candidate passed",
    "shipped_defaults_boot": "each profile as shipped (no --set; campaign shipped_defaults = true) booted ready",
    "memory_events": "every boot of the candidate ran in its memory cgroup with no high, max, oom or oom_kill event",
}
PLAN_KIND = "campaign-plan"


class Gate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: str = Field(
        description="decode_tps, tpot, ttft, e2e (bench cells), kv_pool, canaries, memory_events or shipped_defaults_boot"
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
        label = BENCH_METRICS[self.metric].label if self.metric in BENCH_METRICS else self.metric
        return f"{label}{where} no worse than {self.worse:g}%"


class ShipSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    baseline: str | None = Field(
        default=None, description="the build every other is judged against (default: the first)"
    )
    gates: list[Gate] = Field(default_factory=list)
    add_boots: bool = Field(
        default=False,
        description="after the planned boots, add whole repeats (within the campaign's budget) until each bench "
        "gate's MDE is within its allowance: a gate that can decide is not left undecided for want of boots",
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
