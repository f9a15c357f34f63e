"""From config and --set to a checked launch plan, and the envelope labels its receipts carry."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from forklift.config import Config
from forklift.config.load import program_at
from forklift.engines import EngineAdapter, engine_adapter
from forklift.errors import ForkliftError, UnreachableError
from forklift.installed.package import locate, site_from_python
from forklift.installed.verify import installed_overlay_hash
from forklift.knobs.flags import capture_flags, engine_version
from forklift.knobs.registry import registry
from forklift.knobs.report import knob_report
from forklift.launch.engine_checks import check_flags, check_knobs, legacy_warnings
from forklift.launch.preflight import engine_python
from forklift.launch.resolve import Resolved, parse_sets, resolve, setting_name
from forklift.receipts.envelope import Labels, default_build
from forklift.series.gate import configured_series

CONTAINERENV = Path("/run/.containerenv")  # podman's: the container's name, id, image and imageid


@dataclass
class LaunchPlan:
    resolved: Resolved
    adapter: EngineAdapter
    warnings: list[str] = field(default_factory=list)
    checked_against: str | None = None  # the engine version flags and knobs were checked against
    knobs_from: str | None = None  # with no engine installed: where the knobs were checked


def make_launch_plan(
    config: Config,
    name: str,
    sets: list[str],
    port: int | None = None,
    check: bool = True,
    python: str | None = None,
    command: list[str] | None = None,
) -> LaunchPlan:
    """Resolve the profile; when the engine is installed (and check), check flags and knobs against it.

    `python` or `command` replace the profile's engine (a campaign's build runs every setting).
    """

    adapter = engine_adapter(config.data.engine.kind)
    choices, overrides = parse_sets(sets)
    resolved = resolve(config.data.profiles, name, choices, overrides, adapter)
    if python is not None or command is not None:
        resolved = replace(resolved, python=python, command=command or adapter.serve_argv(python))
    elif resolved.python is not None:  # the profile's own: a path in it is relative to forklift.toml
        own = program_at(resolved.python, config.root)
        serves = resolved.command == adapter.serve_argv(resolved.python)
        resolved = replace(resolved, python=own, command=adapter.serve_argv(own) if serves else resolved.command)
    if port is not None:
        moved = [replace(f, values=(str(port),)) if f.name == "--port" else f for f in resolved.flags]
        resolved = replace(resolved, port=port, flags=moved)
    plan = LaunchPlan(resolved, adapter, legacy_warnings(resolved, adapter))
    if not check:
        return plan
    python = engine_python(resolved, adapter)
    if python and Path(python).exists():
        check_knobs(resolved, adapter, registry(site_from_python(Path(python), adapter.package), adapter, reads=False))
        flags = capture_flags(python, adapter)
        check_flags(resolved, flags)
        plan.checked_against = flags.version
        return plan
    # No engine here (a CI box printing recipes): knobs are still checked, against the pinned
    # upstream tree with the series applied, when that tree can be had.

    try:
        check_knobs(resolved, adapter, knob_report(config).patched)
        plan.knobs_from = "the pinned tree plus the series"
    except UnreachableError as exc:
        plan.warnings.append(f"knobs not checked: the pinned upstream tree is not cached and {exc}")
    return plan


def receipt_labels(config: Config, plan: LaunchPlan, python: str | None) -> Labels:
    """The envelope fields every receipt of this launch carries: pin, engine version, overlay hash, build, setting.

    The overlay hash is what the distribution's series changed in the installed engine (none
    when it is not applied, or when the engine runs through a command forklift cannot see into).
    """

    version = plan.checked_against or (engine_version(python, plan.adapter) if python else None)
    overlay = installed_overlay(config, python, plan.adapter) if python else None
    return Labels(
        pin=config.data.upstream.model_dump(),
        engine_version=version,
        overlay_hash=overlay,
        image=running_image(),
        build=default_build(version, overlay),
        setting=setting_name(plan.resolved),
    )


def running_image(environ: dict[str, str] | None = None, containerenv: Path = CONTAINERENV) -> str | None:
    """The ID of the image forklift runs in: FORKLIFT_IMAGE (`podman run -e FORKLIFT_IMAGE=<image ID>`), else the
    imageid podman writes in /run/.containerenv; None outside a container, or when neither says."""
    given = (os.environ if environ is None else environ).get("FORKLIFT_IMAGE", "").strip()
    if given:
        return given
    try:
        text = containerenv.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "imageid" and value.strip().strip('"'):
            return value.strip().strip('"')
    return None


def installed_overlay(config: Config, python: str, adapter: EngineAdapter) -> str | None:

    try:
        return installed_overlay_hash(
            locate(Path(python), adapter.package, adapter.serve_script), configured_series(config)
        )
    except ForkliftError:  # no RECORD, no series: the build is labelled by its version alone
        return None
