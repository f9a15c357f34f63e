"""Run a campaign's plan: each slot a controlled boot and its served suites, then the ladders, then the report.

Resumable: a slot whose `campaign-cell` receipt exists is finished and skipped, whatever its
outcome (a refused boot is a result). A slot cut short (Ctrl-C, a crash) is moved aside to
`<receipts>.interrupted/` when the campaign runs again, so the folder only ever holds whole
cells and the report never mixes a half-measured one in.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from forklift.campaign.builds import Build
from forklift.campaign.plan import CampaignPlan, LadderJob, Slot
from forklift.campaign.schema import CampaignFile
from forklift.campaign.suites import Endpoint, LadderContext
from forklift.config import Config
from forklift.errors import ForkliftError
from forklift.launch.boot import check_control, control_variable
from forklift.launch.plan import LaunchPlan, make_plan
from forklift.launch.session import launched
from forklift.receipts import new_receipt, write_receipt
from forklift.receipts.envelope import Labels

CELL_KIND = "campaign-cell"


def finished(folder: Path) -> bool:
    return any(folder.glob(f"*-{CELL_KIND}-*.json"))


def set_aside(receipts: Path, key: str) -> Path | None:
    """An unfinished cell's folder, moved out of the campaign's receipts (never deleted)."""
    folder = receipts / key
    if not folder.exists() or finished(folder):
        return None
    target = receipts.with_name(receipts.name + ".interrupted") / f"{key}-{time.strftime('%Y%m%dT%H%M%S')}"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(folder), target)
    return target


@dataclass
class Runner:
    campaign: CampaignFile
    config: Config
    builds: dict[str, Build]
    plan: CampaignPlan
    say: Callable[[str], None] = print
    _plans: dict[tuple[str, str], LaunchPlan] = field(default_factory=dict)

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
            self._plans[key] = make_plan(self.config, profile, list(sets), python=build.python, command=build.command)
        return self._plans[key]

    def run(self) -> tuple[int, int]:
        """Every unfinished cell; returns (cells run now, cells skipped as finished)."""
        ran = skipped = 0
        for key in self.plan.keys:
            moved = set_aside(self.receipts, key)
            if moved:
                self.say(f"{key}: unfinished cell moved aside to {moved}")
        cells = [(s.key, partial(self.run_slot, s)) for s in self.plan.slots]
        cells += [(j.key, partial(self.run_ladder, j)) for j in self.plan.ladders]
        for key, run_cell in cells:
            if finished(self.receipts / key):
                skipped += 1
                continue
            run_cell()
            ran += 1
        return ran, skipped

    def _finish(self, key: str, status: str, body: dict[str, Any], labels: Labels) -> None:
        receipt = new_receipt(CELL_KIND, status=status, body={"key": key, **body}, **labels.fields())
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
        results: list[dict[str, Any]] = []
        control: dict[str, str] = {}
        self.say(f"{slot.key}: booting {build.name} / {setting.name}")
        with launched(
            self.config,
            plan,
            folder,
            self.logs,
            labels=labels,
            extra_env={variable: "1"} if variable else None,
            raise_failed=False,
        ) as booted:
            if booted.ready and variable:
                try:
                    check_control(booted.body, variable)
                    control["held"] = f"the engine warned about {variable}"
                except ForkliftError as exc:
                    control["failed"] = str(exc)
            # an engine that ignores unknown knobs cannot be trusted with the known ones
            if booted.ready and "failed" not in control:
                endpoint = Endpoint(
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
                for chosen, options in self.plan.served:
                    if not options.runs_on(setting.name):
                        continue
                    try:
                        status = chosen.run(endpoint, options.ready)
                    except ForkliftError as exc:  # the suite could not run (its receipt says so): the cell failed
                        status = f"failed: {exc}"
                    results.append({"kind": chosen.name, "name": options.title, "status": status})
        whole = booted.ready and "failed" not in control and all(r["status"] == "ok" for r in results)
        body = {
            "repeat": slot.repeat,
            "position": slot.position,
            "boot": booted.body.outcome,
            "control": control.get("failed") or control.get("held"),
            "suites": results,
        }
        self._finish(slot.key, "ok" if whole else "failed", body, booted.labels)

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
    from forklift.installed.package import site_from_python

    return (site_from_python(Path(build.python), package) / package,) if build.python else ()


def plan_lines(runner: Runner) -> list[str]:
    """The plan as --dry-run prints it: every boot with its exact argv and environment (secrets redacted)."""
    import shlex

    from forklift.launch.resolve import printed_lines

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
    for slot in runner.plan.slots:
        build = runner.builds[slot.build]
        plan = runner.launch_plan(build, slot.setting.profile, slot.setting.sets, slot.setting.name)
        state = "finished, skipped" if finished(runner.receipts / slot.key) else "to run"
        mark = f" aa={slot.aa}" if slot.aa else ""
        out.append(f"{slot.key} [{state}] build={build.name} setting={slot.setting.name!r}{mark}")
        control = [f"{plan.adapter.env_prefix}FORKLIFT_CONTROL_<random>=1"] if runner.campaign.control else None
        out.append(f"  {argv(plan, control)}")
    for job in runner.plan.ladders:
        from forklift.ladder import parse_axis

        build = runner.builds[job.build]
        axis = parse_axis(job.options.ready.axis)
        state = "finished, skipped" if finished(runner.receipts / job.key) else "to run"
        out.append(f"{job.key} [{state}] ladder {axis.key} over {', '.join(axis.values)}: one boot per value")
        for value in axis.values:
            sets = (*job.setting.sets, axis.set_item(value))
            plan = make_plan(
                runner.config, job.setting.profile, list(sets), check=False, python=build.python, command=build.command
            )
            out.append(f"  {argv(plan)}")
    return out
