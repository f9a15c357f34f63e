"""Run a campaign's plan: each slot a controlled boot and its served suites, then the ladders, then the report.

Resumable: a slot whose `campaign-cell` receipt exists is finished and skipped, whatever its
outcome (a refused boot is a result). A slot cut short (Ctrl-C, a crash) is moved aside to
`<receipts>.interrupted/` when the campaign runs again, so the folder only ever holds whole
cells and the report never mixes a half-measured one in.
"""

from __future__ import annotations

import math
import shlex
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from forklift.campaign.builds import Build, engine_environment
from forklift.campaign.plan import (
    CampaignPlan,
    Cell,
    LadderJob,
    Slot,
    build_order,
    make_campaign_plan,
    shipped_defaults,
)
from forklift.campaign.precision import Aim, boots_wanted, parse_budget, parse_percent, repeats_to_add
from forklift.campaign.schema import MAX_BOOTS, CampaignFile
from forklift.campaign.suites import BenchSuiteOptions, LadderContext, ServedSetting, suite_cells
from forklift.config import Config
from forklift.errors import ConfigError, ForkliftError, interrupt_point
from forklift.installed.package import site_from_python
from forklift.ladder import parse_axis
from forklift.launch.boot import check_control, control_variable
from forklift.launch.caches import cold_caches
from forklift.launch.plan import LaunchPlan, make_launch_plan
from forklift.launch.resolve import printed_lines
from forklift.launch.session import launched
from forklift.receipts import new_receipt, write_receipt
from forklift.receipts.envelope import Labels, fingerprint
from forklift.receipts.facts import kernel_boot_id
from forklift.receipts.store import read_receipt, receipts_in
from forklift.report.ship import BENCH_METRICS, PLAN_KIND
from forklift.stats.sample import read_bench_runs

CELL_KIND = "campaign-cell"
WARMUP_KIND = "campaign-warmup"


def finished(folder: Path) -> bool:
    return bool(receipts_in(folder, f"*-{CELL_KIND}-*"))


def set_aside(receipts: Path, key: str) -> Path | None:
    """An unfinished cell's folder, moved out of the campaign's receipts (never deleted)."""
    folder = receipts / key
    if not folder.exists() or finished(folder):
        return None
    target = receipts.with_name(receipts.name + ".interrupted") / f"{key}-{time.strftime('%Y%m%dT%H%M%S')}"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(folder), target)
    return target


class WindowEnd(ForkliftError):
    """The run stopped between two cells at its deadline (--until) or cell count (--max-cells): nothing is cut,
    and the same command resumes it."""


@dataclass
class Runner:
    campaign: CampaignFile
    config: Config
    builds: dict[str, Build]
    plan: CampaignPlan
    say: Callable[[str], None] = print
    # runs the unfinished cells elsewhere (a Ray cluster: campaign.cluster), else they run here, in order
    execute: Callable[[Runner, list[Cell]], int] | None = None  # returns how many it ran
    node: dict[str, Any] | None = None  # where the cell runs, stated in its cell receipt (a Ray node)
    _plans: dict[tuple[str, str], LaunchPlan] = field(default_factory=dict)
    max_cells: int | None = None  # cells this run may start (--max-cells)
    until: float | None = None  # the time (epoch seconds) by which this run's last cell must end (--until)
    _started: int = 0

    @property
    def receipts(self) -> Path:
        return self.campaign.at(self.campaign.receipts)

    @property
    def logs(self) -> Path:
        return self.campaign.at(self.campaign.logs)

    def launch_plan(self, build: Build, profile: str, sets: tuple[str, ...], name: str) -> LaunchPlan:
        """Resolved and checked once per build and setting (flags and knobs against that build's engine)."""
        key = (build.name, name)
        if key not in self._plans:
            with engine_environment(build):
                plan = make_launch_plan(self.config, profile, list(sets), python=build.python, command=build.command)
            if build.env:  # the build's package folder, stated in the boot receipt with the rest of the env
                plan = replace(plan, resolved=replace(plan.resolved, env={**plan.resolved.env, **build.env}))
            self._plans[key] = plan
        return self._plans[key]

    def write_plan(self) -> None:
        """The campaign as planned (builds, order, gates, margins) in a receipt, so `forklift report` decides from receipts."""

        body = {
            "builds": {name: b.labels.fields() for name, b in self.builds.items()},
            "baseline": (self.campaign.ship.baseline if self.campaign.ship else None) or next(iter(self.builds)),
            "order": self.campaign.order,
            "repeats": self.campaign.repeats,
            "aa": self.campaign.aa,
            "boots": len(self.plan.slots),
            "ship": self.campaign.ship.model_dump(mode="json") if self.campaign.ship else None,
            "margins": [rule.model_dump(mode="json") for rule in self.campaign.margins],
            "shipped_defaults": shipped_defaults(self.campaign, self.config)
            if self.campaign.shipped_defaults
            else None,
        }
        for old in receipts_in(self.receipts, f"*-{PLAN_KIND}-*"):
            old.unlink()  # one plan per folder: the latest run's (a resumed campaign states it again)
        write_receipt(new_receipt(PLAN_KIND, body=body), self.receipts)

    def run(self) -> tuple[int, int]:
        """Every unfinished cell; returns (cells run now, cells skipped as finished)."""
        if self.execute is None and self.campaign.boxes:
            raise ConfigError(
                f"{self.campaign.path}: boxes: name Ray nodes, so the campaign runs on a Ray cluster "
                '(executor = "ray" with RAY_ADDRESS, or --ray ADDRESS)'
            )
        if self.execute is not None and (self.max_cells is not None or self.until is not None):
            raise ConfigError("--max-cells and --until stop a campaign between cells run here, not on a Ray cluster")
        if self.execute is not None and self.plan.warmups:
            raise ConfigError(
                f"{self.campaign.path}: warmup_boots: not on a Ray cluster yet (each node would need its own warm-up)"
            )
        self.write_plan()
        self.note_other_machines()
        for key in self.plan.keys:
            moved = set_aside(self.receipts, key)
            if moved:
                self.say(f"{key}: unfinished cell moved aside to {moved}")
        if any(not finished(self.receipts / s.key) for s in self.plan.slots):
            for slot in self.plan.warmups:
                if self.warmed(slot):
                    self.say(f"{slot.key}: warmed up already since this machine booted; no warm-up boot")
                else:
                    self.warm_up(slot)
        ran, skipped = self.run_cells(self.plan.cells)
        more, before = self.run_cells(self.added_slots())
        return ran + more, skipped + before

    def run_cells(self, cells: Sequence[Cell]) -> tuple[int, int]:
        """The unfinished ones of these cells, here in order or through `execute`; returns (run, skipped)."""
        todo = [cell for cell in cells if not finished(self.receipts / cell.key)]
        if self.execute is not None:
            return (self.execute(self, todo) if todo else 0), len(cells) - len(todo)
        for cell in todo:
            self.check_window(cell.key)
            self.run_cell(cell)
            self._started += 1
        return len(todo), len(cells) - len(todo)

    def check_window(self, key: str) -> None:
        """Stop before `key` when this run has started its --max-cells, or when a cell as long as the finished
        ones took on average would end after --until (a first cell, with none to go by, always starts)."""
        if self.max_cells is not None and self._started >= self.max_cells:
            raise WindowEnd(f"{key}: not started: this run started its {self.max_cells} cell(s) (--max-cells)")
        if self.until is None:
            return
        spent = [s for s in self.spent() if s > 0]
        expected = sum(spent) / len(spent) if spent else 0.0
        if time.time() + expected > self.until:
            raise WindowEnd(
                f"{key}: not started: a cell takes about {expected:.0f} s here and --until is "
                f"{max(0.0, self.until - time.time()):.0f} s away"
            )

    def run_cell(self, cell: Cell) -> None:
        if isinstance(cell, Slot):
            self.run_slot(cell)
        else:
            self.run_ladder(cell)

    def warmed(self, slot: Slot) -> bool:
        """A warm-up of this slot finished ready since the machine last booted: its caches are still warm.

        A resumed campaign on the same running machine skips it; a rebooted or fresh box has a new boot id."""
        boot_id, here = kernel_boot_id(), fingerprint().machine_id
        return boot_id is not None and any(
            receipt.status == "ok"
            and receipt.body.get("key") == slot.key
            and receipt.body.get("machine_boot") == boot_id
            and receipt.fingerprint.machine_id == here
            for receipt in map(read_receipt, receipts_in(self.receipts / "warmups", f"*-{WARMUP_KIND}-*"))
        )

    def note_other_machines(self) -> list[str]:
        """The machines (fingerprint.machine_id) other than this one that finished cells of the campaign, said
        once: the campaign goes on here, warms up again, and every comparison keeps each machine's boots to
        themselves (rows per machine, never pooled), so a move costs boots a side, not the finished cells."""
        here = fingerprint()
        others: dict[str, str] = {}
        for path in receipts_in(self.receipts, f"*/*-{CELL_KIND}-*"):
            made = read_receipt(path).fingerprint
            if made.machine_id != here.machine_id:
                others.setdefault(made.machine_id, made.hostname)
        if others:
            was = ", ".join(f"{machine} ({host})" for machine, host in sorted(others.items()))
            self.say(
                f"machine changed: cells were finished on {was}; this is {here.machine_id} ({here.hostname}): "
                "it warms up again, and the report keeps each machine's boots in rows of their own"
            )
        return sorted(others)

    def warm_up(self, slot: Slot) -> None:
        """Boot and stop, measuring nothing: the first boot on a box compiles (torch.compile, CUDA graphs) and
        reads the weights from disk, and its numbers differ from the boots after it (an H200 measured +1.1 %
        TPOT on it). A run of the campaign that has cells left does this again unless this machine, since it
        last booted, already has (`warmed`): a rebooted or fresh box has cold caches."""
        build = self.builds[slot.build]
        plan = self.launch_plan(build, slot.setting.profile, slot.setting.sets, slot.setting.name)
        folder = self.logs / "warmup" / f"{slot.key}-{time.strftime('%Y%m%dT%H%M%S')}"
        folder.mkdir(parents=True, exist_ok=True)
        self.say(f"{slot.key}: warm-up boot of {build.name} / {slot.setting.name} (not measured)")
        started = time.monotonic()
        labels = Labels(setting=slot.setting.name).over(build.labels)
        with (
            engine_environment(build),
            launched(self.config, plan, folder, self.logs, labels=labels, raise_failed=False) as booted,
        ):
            outcome = booted.body.outcome
        seconds = time.monotonic() - started
        # the report counts its time with the cells'; its boot receipt stays in the logs, out of every comparison
        body = {
            "key": slot.key,
            "seconds": seconds,
            "boot": outcome,
            "receipts": str(folder),
            "machine_boot": kernel_boot_id(),
        }
        status = "ok" if booted.ready else "failed"
        write_receipt(
            new_receipt(WARMUP_KIND, status=status, body=body, **booted.labels.fields()), self.receipts / "warmups"
        )
        self.say(f"{slot.key}: {outcome} after {seconds:.0f} s; its boot receipt is in {folder}")

    def spent(self) -> list[float]:
        """Seconds each finished boot cell took (from the receipts, so a resumed campaign counts them too)."""

        return [
            float(read_receipt(path).body.get("seconds") or 0.0)
            for path in receipts_in(self.receipts, f"*/*-{CELL_KIND}-*")
        ]

    def aims(self) -> list[Aim]:
        """What the pilot is held to: each bench suite's target MDE, and with `ship.add_boots` each bench gate's
        allowance (a gate decides only when its MDE is within it)."""
        suites = [o.ready for _, o in self.plan.served if isinstance(o.ready, BenchSuiteOptions)]
        cells = {name: None for o in suites for name in suite_cells(o)}
        aims = [
            Aim(parse_percent(o.target_mde, "target_mde"), o.target_metric, suite_cells(o), "target MDE")
            for o in suites
            if o.target_mde
        ]
        ship = self.campaign.ship
        if ship is not None and ship.add_boots:
            aims += [
                Aim(gate.worse / 100, gate.metric, gate.cells or list(cells), f"gate '{gate.title}': MDE within")
                for gate in ship.gates
                if gate.metric in BENCH_METRICS and gate.worse > 0
            ]
        return aims

    def added_slots(self) -> list[Slot]:
        """The repeats the aims add after the planned boots (the pilot), within the budget.

        Decided once, from the pilot's boots (Stein's two-stage rule, forklift.campaign.precision), and
        said: which aim, what the pilot measured, how many boots that asks for, what the budget allows.
        """

        if self.campaign.ship is not None and self.campaign.ship.add_boots is False:
            self.say(f"fixed design (ship.add_boots = false): the {len(self.plan.slots)} planned boots, none added")
            return []
        aims = self.aims()
        if not aims or not self.plan.slots:
            return []
        campaign, builds = self.campaign, list(self.builds)
        baseline = (campaign.ship.baseline if campaign.ship else None) or builds[0]
        order = build_order(builds, campaign.order, campaign.aa)
        per_repeat = min(sum(1 for b, _ in order if b == build) for build in builds if build != baseline)
        boots_now = campaign.repeats * per_repeat
        slots_per_repeat = len(self.plan.slots) // campaign.repeats
        seconds = [s for s in self.spent() if s > 0]
        affordable = 10**6
        if campaign.budget is not None:
            left = parse_budget(campaign.budget, str(campaign.path)) - sum(seconds)
            per_boot = sum(seconds) / len(seconds) if seconds else math.inf  # unknown: add nothing
            affordable = max(0, math.floor(left / (slots_per_repeat * per_boot)))
            self.say(
                f"budget {campaign.budget}: {sum(seconds):.0f} s spent over {len(seconds)} timed boots, "
                f"room for {affordable} more repeat(s) of {slots_per_repeat} boots"
            )
        cells_now = len(self.plan.slots) + len(self.plan.ladders) + len(self.plan.warmups)
        affordable = min(affordable, max(0, (MAX_BOOTS - cells_now) // slots_per_repeat))  # the plan's own cap
        runs, _ = read_bench_runs([self.receipts])
        add = 0
        for aim in aims:
            max_boots = boots_now + min(affordable, 64) * per_repeat
            for need in boots_wanted(runs, baseline, aim.cells, aim.metric, aim.target, max_boots):
                more = repeats_to_add(need.boots, boots_now, per_repeat, affordable)
                self.say(
                    f"{aim.label} {aim.target:.2%} ({aim.metric}): {need.line(aim.target)}; "
                    + (f"adding {more} repeat(s) of {slots_per_repeat} boots" if more else "no boots to add")
                    + (
                        " (capped by the budget)"
                        if more == affordable and need.boots > boots_now + more * per_repeat
                        else ""
                    )
                )
                add = max(add, more)
        if not add:
            return []
        extended = make_campaign_plan(campaign.model_copy(update={"repeats": campaign.repeats + add}), self.config)
        return [s for s in extended.slots if s.repeat > campaign.repeats]

    def _finish(self, key: str, status: str, body: dict[str, Any], labels: Labels) -> None:
        where = {"node": self.node} if self.node else {}
        receipt = new_receipt(CELL_KIND, status=status, body={"key": key, **body, **where}, **labels.fields())
        write_receipt(receipt, self.receipts / key)
        self.say(f"{key}: {status}")

    def run_slot(self, slot: Slot) -> None:
        build = self.builds[slot.build]
        setting = slot.setting
        plan = self.launch_plan(build, setting.profile, setting.sets, setting.name)
        folder = self.receipts / slot.key
        folder.mkdir(parents=True, exist_ok=True)
        labels = Labels(setting=setting.name, aa=slot.aa).over(build.labels)
        variable = control_variable(plan.adapter) if self.campaign.control else None
        caches = cold_caches(plan.adapter.cache_env, self.logs / "cold" / slot.key) if build.cold else {}
        results: list[dict[str, Any]] = []
        suites = [(chosen, options) for chosen, options in self.plan.served if options.runs_on(setting.name)]
        control: dict[str, str] = {}
        self.say(f"{slot.key}: booting {build.name} / {setting.name}")
        started = time.monotonic()
        with (
            engine_environment(build),
            launched(
                self.config,
                plan,
                folder,
                self.logs,
                labels=labels,
                extra_env={**caches, **({variable: "1"} if variable else {})},
                raise_failed=False,
            ) as booted,
        ):
            if booted.ready and variable:
                try:
                    check_control(booted.body, variable)
                    control["held"] = f"the engine warned about {variable}"
                except ForkliftError as exc:
                    control["failed"] = str(exc)
            # an engine that ignores unknown knobs cannot be trusted with the known ones
            if booted.ready and "failed" not in control:
                endpoint = ServedSetting(
                    url=plan.resolved.url,
                    model=plan.resolved.served_name,
                    folder=folder,
                    setting=setting.name,
                    labels=booted.labels,
                    boot=booted.body.model_dump(mode="json"),
                    log_path=booted.server.log_path,
                    engine=plan.adapter.name,
                    engine_roots=engine_roots(build, plan.adapter.package),
                )
                for chosen, options in suites:
                    interrupt_point("campaign-suite")
                    try:
                        status = chosen.run(endpoint, options.ready)
                    except ForkliftError as exc:  # the suite could not run (its receipt says so): the cell failed
                        status = f"failed: {exc}"
                    results.append({"kind": chosen.name, "name": options.title, "status": status})
        # a Ctrl-C propagates from the block (no cell receipt: a resume runs the cell again); ok needs every suite's
        ok = len(results) == len(suites) and all(r["status"] == "ok" for r in results)
        whole = booted.ready and "failed" not in control and ok
        seconds = time.monotonic() - started
        body = {
            "seconds": seconds,
            "repeat": slot.repeat,
            "position": slot.position,
            "boot": booted.body.outcome,
            "control": control.get("failed") or control.get("held"),
            "suites": results,
            **({"cold_caches": caches} if caches else {}),
        }
        self._finish(slot.key, "ok" if whole else "failed", body, booted.labels)
        if self.campaign.budget is not None:
            budget = parse_budget(self.campaign.budget, str(self.campaign.path))
            if seconds > budget:
                raise ForkliftError(
                    f"{self.campaign.path}: budget = {self.campaign.budget!r} is less than one boot "
                    f"({slot.key} took {seconds:.1f} s): give the campaign at least that"
                )

    def run_ladder(self, job: LadderJob) -> None:
        build = self.builds[job.build]
        folder = self.receipts / job.key
        folder.mkdir(parents=True, exist_ok=True)
        labels = build.labels
        self.say(f"{job.key}: ladder on {build.name} / {job.setting.name}")
        context = LadderContext(
            self.config,
            job.setting.profile,
            list(job.setting.sets),
            folder,
            self.logs,
            build.python,
            build.command,
            labels,
        )
        status = job.suite.run(context, job.options.ready)
        self._finish(job.key, status, {"ladder": job.options.ready.axis}, Labels(setting=job.setting.name).over(labels))


def engine_roots(build: Build, package: str) -> tuple[Path, ...]:
    """Where the build's engine package is installed (a quality corpus there would move with the pin)."""

    return (site_from_python(Path(build.python), package) / package,) if build.python else ()


def plan_lines(runner: Runner) -> list[str]:
    """The plan as --dry-run prints it: every boot with its exact argv and environment (secrets redacted)."""

    def argv(plan: LaunchPlan, extra: list[str] | None = None) -> str:
        lines = printed_lines(plan.resolved)
        words, env = lines[: len(plan.resolved.argv)], lines[len(plan.resolved.argv) :]
        return shlex.join(["env", *env, *(extra or []), *words])

    out = [f"builds: {', '.join(runner.builds)}"]
    for build in runner.builds.values():
        out.append(
            f"  {build.name}: {build.proof}; labels build={build.name} version={build.version} overlay={build.overlay_hash}"
        )
    served = ", ".join(o.title or s.name for s, o in runner.plan.served) or "none"
    out.append(f"boots: {len(runner.plan.slots)} (each: positive control, then {served})")
    for slot in runner.plan.warmups:
        out.append(f"{slot.key} [warm-up, not measured] build={slot.build} setting={slot.setting.name!r}")
    for slot in runner.plan.slots:
        build = runner.builds[slot.build]
        plan = runner.launch_plan(build, slot.setting.profile, slot.setting.sets, slot.setting.name)
        state = "finished, skipped" if finished(runner.receipts / slot.key) else "to run"
        mark = f" aa={slot.aa}" if slot.aa else ""
        out.append(f"{slot.key} [{state}] build={build.name} setting={slot.setting.name!r}{mark}")
        extra = [f"{plan.adapter.env_prefix}FORKLIFT_CONTROL_<random>=1"] if runner.campaign.control else []
        if build.cold:
            extra += [f"{name}=<logs>/cold/{slot.key}/cold-<random>/{name.lower()}" for name in plan.adapter.cache_env]
        out.append(f"  {argv(plan, extra)}")
    for job in runner.plan.ladders:
        build = runner.builds[job.build]
        axis = parse_axis(job.options.ready.axis)
        state = "finished, skipped" if finished(runner.receipts / job.key) else "to run"
        out.append(f"{job.key} [{state}] ladder {axis.key} over {', '.join(axis.values)}: one boot per value")
        for value in axis.values:
            sets = (*job.setting.sets, axis.set_item(value))
            plan = make_launch_plan(
                runner.config, job.setting.profile, list(sets), check=False, python=build.python, command=build.command
            )
            out.append(f"  {argv(plan)}")
    return out
