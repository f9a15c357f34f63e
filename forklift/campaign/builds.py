"""A campaign's builds, proved before anything runs: which series each engine install really carries.

Each build names an engine interpreter; `forklift verify --installed`'s check runs on it
against the series of the distribution it was built from (or no series, for a pristine
install), and must pass. Its version and the overlay hash of what the series changed in it
then label every receipt the build measures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forklift.campaign.schema import BuildSpec, CampaignFile
from forklift.config import Config, load_config
from forklift.engines import adapter as engine_adapter
from forklift.errors import ForkliftError
from forklift.receipts.envelope import Labels


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


def verify_build(name: str, spec: BuildSpec, campaign: CampaignFile, default: Config) -> Build:
    from forklift.installed.package import locate
    from forklift.installed.verify import installed_overlay_hash, verify
    from forklift.knobs.flags import engine_version
    from forklift.series.gate import configured_series
    from forklift.series.model import Series

    config = load_config(campaign.at(spec.config)) if spec.config else default
    pin = config.data.upstream.model_dump()
    if spec.python is None:
        proof = "not verified: a command build (forklift cannot see which engine it runs)"
        return Build(name, None, spec.command, None, None, pin, proof, Labels(build=name, pin=pin))
    python = str(campaign.at(spec.python)) if not Path(spec.python).is_absolute() else spec.python
    adapter = engine_adapter(config.data.engine.kind)
    package = locate(Path(python), adapter.package, adapter.serve_script)
    series = Series(config.series_dir, (), ()) if spec.pristine else configured_series(config)
    state = verify(package, series)
    if not state.ok:
        raise ForkliftError(
            f"build {name}: installed {adapter.package} at {python} is not what it claims: {state.summary()}"
        )
    overlay = installed_overlay_hash(package, series) if series.patches else None
    version = engine_version(python, adapter)
    what = "pristine" if spec.pristine else f"{len(series.patches)} patches of {config.series_dir} applied"
    proof = f"{package.dist_info.name}: {state.checked} files checked, {what}"
    labels = Labels(build=name, pin=pin, engine_version=version, overlay_hash=overlay)
    return Build(name, python, None, version, overlay, pin, proof, labels)


def verify_builds(campaign: CampaignFile, default: Config) -> list[Build]:
    return [verify_build(name, spec, campaign, default) for name, spec in campaign.builds.items()]
