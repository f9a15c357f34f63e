"""A campaign's builds, proved before anything runs: which series each engine install really carries.

Each build names an engine interpreter; `forklift verify`'s check runs on it
against the series of the distribution it was built from (or no series, for a pristine
install), and must pass. Its version and the overlay hash of what the series changed in it
then label every receipt the build measures.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forklift.campaign.schema import BuildSpec, CampaignFile, expand
from forklift.config import Config, load_config
from forklift.config.load import program_at
from forklift.engines import engine_adapter
from forklift.errors import ConfigError, ForkliftError
from forklift.installed.package import locate, site_from_python
from forklift.installed.verify import installed_overlay_hash, verify_installed
from forklift.knobs.flags import engine_version
from forklift.receipts.envelope import Labels
from forklift.series.gate import configured_series
from forklift.series.model import Series


@dataclass(frozen=True)
class Build:
    name: str
    python: str | None
    command: list[str] | None
    version: str | None
    overlay_hash: str | None
    pin: dict[str, Any] | None
    proof: str  # what was verified, in one line
    labels: Labels = field(default_factory=Labels)
    site: str | None = None  # the folder put first on the engine's PYTHONPATH
    cold: bool = False  # each boot with fresh, empty compile caches

    @property
    def env(self) -> dict[str, str]:
        """What the engine's environment gains for this build (its package folder first on PYTHONPATH)."""
        if self.site is None:
            return {}
        inherited = os.environ.get("PYTHONPATH")
        return {"PYTHONPATH": os.pathsep.join([self.site, *([inherited] if inherited else [])])}


@contextmanager
def engine_environment(build: Build) -> Iterator[None]:
    """forklift's own engine probes (version, flags, knobs) run with the build's PYTHONPATH, then it is restored."""
    saved = {key: os.environ.get(key) for key in build.env}
    os.environ.update(build.env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def interpreter(name: str, spec_python: str, campaign: CampaignFile) -> str:
    """The build's interpreter: a path (relative to the campaign file) or a command on PATH; missing is one line."""
    spec_python = expand(spec_python, f"{campaign.path}: builds.{name}.python")
    python = program_at(spec_python, campaign.root)
    if "/" not in python:
        found = shutil.which(python)
        if found is None:
            raise ConfigError(f"{campaign.path}: builds.{name}.python = {spec_python!r}: no such command on PATH")
        return found
    if not Path(python).is_file() or not os.access(python, os.X_OK):
        raise ConfigError(f"{campaign.path}: builds.{name}.python = {spec_python!r}: no interpreter at {python}")
    return python


def imports_first(name: str, build: Build, package: str, proven: Path) -> None:
    """The folder the build's boot imports `package` from (its interpreter, its environment, this working folder)
    must be the one verified: else an OK would be about files beside the ones that run."""
    assert build.python is not None
    found = site_from_python(Path(build.python), package, {**os.environ, **build.env}) / package
    if os.path.realpath(found) != os.path.realpath(proven):
        raise ForkliftError(
            f"build {name}: {build.python} imports {package} from {found} first, not from {proven}, the one verified"
            " (PYTHONPATH, a .pth file or a folder named so in the working folder puts it first)"
        )


def verify_build(name: str, spec: BuildSpec, campaign: CampaignFile, default: Config) -> Build:

    config = load_config(campaign.at(spec.config)) if spec.config else default
    pin = config.data.upstream.model_dump()
    if spec.python is None:
        proof = "not verified: a command build (forklift cannot see which engine it runs)"
        return Build(name, None, spec.command, None, None, pin, proof, Labels(build=name, pin=pin), cold=spec.cold)
    python = interpreter(name, spec.python, campaign)
    site = str(campaign.at(spec.site)) if spec.site else None
    if site is not None and not Path(site).is_dir():
        raise ConfigError(f"{campaign.path}: builds.{name}.site = {spec.site!r}: no folder at {site}")
    adapter = engine_adapter(config.data.engine.kind)
    package = locate(Path(site or python), adapter.package, adapter.serve_script)
    series = Series(config.series_dir, (), ()) if spec.pristine else configured_series(config)
    state = verify_installed(package, series, trimmed=spec.trimmed)
    if not state.ok:
        raise ForkliftError(
            f"build {name}: installed {adapter.package} at {python} is not what it claims: {state.summary()}"
        )
    overlay = installed_overlay_hash(package, series) if series.patches else None
    build = Build(name, python, None, None, overlay, pin, "", site=site)
    imports_first(name, build, adapter.package, package.site / adapter.package)
    with engine_environment(build):
        version = engine_version(python, adapter)
    what = "pristine" if spec.pristine else f"{len(series.patches)} patches of {config.series_dir} applied"
    where = f" in {site}" if site else ""
    proof = f"{package.dist_info.name}{where}: {state.checked} files checked, {what}"
    labels = Labels(build=name, pin=pin, engine_version=version, overlay_hash=overlay)
    return Build(name, python, None, version, overlay, pin, proof, labels, site, spec.cold)


def verify_builds(campaign: CampaignFile, default: Config) -> list[Build]:
    return [verify_build(name, spec, campaign, default) for name, spec in campaign.builds.items()]
