"""campaign.toml: builds, settings, suites and the order they run in (schema and loading only).

config = "forklift.toml"        # the distribution whose profiles the settings name
receipts = "receipts"           # one folder for every receipt of the campaign
order = "ABBA"                  # per setting: builds forward then back ("AB": forward only)
repeats = 1
aa = true                       # A/A control: the first build twice per setting, marked 1 and 2
executor = "local"              # or "ray": every cell a task on a Ray cluster (RAY_ADDRESS or --ray)

[builds.old]
python = "/opt/vllm-0.32/bin/python"
pristine = true                 # no series in it: verified pristine against its RECORD

[builds.new]
python = "/opt/vllm-0.33/bin/python"
config = "../dist-0.33"         # built from this pin + series: verified applied

[ship]                          # the decision: every other build against the first (or ship.baseline)
gates = [{ metric = "decode_tps", worse = "2%" }, { metric = "ttft", worse = "10%" }]

[[settings]]
profile = "serve"
axes = { spec = ["off", "ngram"] }   # one setting per choice (per combination of several axes)

[[suites]]
kind = "bench"
synthetic = "128:128"
concurrency = [1, 4]

[boxes.h200]                    # executor = "ray": each box runs the whole plan, on nodes
resources = { H200 = 1 }        # that have these Ray resources
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from forklift.campaign.precision import parse_budget
from forklift.config.load import describe
from forklift.config.toml import tomllib
from forklift.errors import ConfigError
from forklift.report.ship import ShipSpec, check_gates
from forklift.stats.verdict import MarginRule

# The campaign's limits, in one place. A campaign.toml may come from someone else: every count that multiplies
# into boots (or into a list held in memory) is capped here, so a hostile one is one line naming the key, never a
# plan of 10^8 cells. MAX_BOOTS bounds the product (a boot takes a minute or more: 10,000 is a week of one box).
MAX_BOOTS = 10_000
MAX_REPEATS = 1_000
MAX_WARMUP_BOOTS = 100
MAX_BUILDS = 64
MAX_SETTINGS = 1_000  # [[settings]] entries, and the choices of one axis
MAX_SUITES = 100
MAX_BOXES = 64


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BuildSpec(_Strict):
    """One engine install: its interpreter (or command), and the distribution it was built from.

    `site` is for one interpreter with the engine in several package folders (each build's vLLM
    copied and patched with `forklift apply FOLDER`): the folder goes first on the
    engine's PYTHONPATH, so its package shadows the interpreter's own.
    """

    python: str | None = Field(default=None, description="the engine's interpreter: a path, or a command on PATH")
    site: str | None = Field(default=None, description="folder holding this build's engine package (needs python)")
    command: list[str] | None = None
    config: str | None = Field(default=None, description="forklift.toml (or its folder) this build was built from")
    pristine: bool = Field(default=False, description="the install carries no series (verified pristine)")
    trimmed: bool = Field(default=False, description="files of the wheel's RECORD may be absent (a trimmed install)")
    cold: bool = Field(
        default=False,
        description="every boot of this build starts with fresh, empty compile caches (a cold arm; the folders "
        "are recorded in its cells)",
    )

    @model_validator(mode="after")
    def _one_engine(self) -> BuildSpec:
        if (self.python is None) == (self.command is None):
            raise ValueError("give exactly one of python (the engine's interpreter) or command")
        if self.site is not None and self.python is None:
            raise ValueError("site needs python: the interpreter that runs the engine from that folder")
        return self


class BoxSpec(_Strict):
    """A kind of Ray node: the resources a cell asks for, so it lands on a node of this box (never two at once)."""

    resources: dict[str, float] = Field(default_factory=dict, description="custom Ray resources, e.g. { H200 = 1 }")
    num_gpus: float = Field(default=0, ge=0, description="Ray's num_gpus a cell asks for")
    num_cpus: float = Field(default=1, ge=0, description="Ray's num_cpus a cell asks for")


class SettingSpec(_Strict):
    profile: str
    set: list[str] = Field(default_factory=list, description="--set items every setting of this entry gets")
    axes: dict[str, Annotated[list[str], Field(max_length=MAX_SETTINGS)]] = Field(
        default_factory=dict, max_length=32, description="axis -> choices: one setting per combination"
    )


class CampaignFile(_Strict):
    path: Path
    config: str = "forklift.toml"
    receipts: str = "receipts"
    logs: str = "logs"
    report: str | None = Field(default="report.md", description="rendered at the end, beside the receipts")
    baseline: str | None = Field(default=None, description="report baseline: a build or a setting")
    order: Literal["ABBA", "AB"] = "ABBA"
    repeats: int = Field(default=1, ge=1, le=MAX_REPEATS)
    aa: bool = False
    warmup_boots: int = Field(
        default=0,
        ge=0,
        le=MAX_WARMUP_BOOTS,
        description="unmeasured boots of the first build per setting, before the cells each run has left: "
        "they fill the engine's compile caches; their receipts stay with the logs",
    )
    control: bool = Field(default=True, description="export a made-up knob on every boot; the engine must warn")
    shipped_defaults: bool = Field(
        default=False,
        description="also boot each profile the settings name as its users run it (no --set, its own axis "
        "defaults), unless a setting already is that; the [ship] gate shipped_defaults_boot reads these boots",
    )
    builds: dict[str, BuildSpec] = Field(max_length=MAX_BUILDS)
    settings: list[SettingSpec] = Field(max_length=MAX_SETTINGS)
    suites: list[dict[str, Any]] = Field(max_length=MAX_SUITES)
    ship: ShipSpec | None = Field(default=None, description="the gates that decide SHIP, HOLD or UNDECIDED")
    margins: list[MarginRule] = Field(
        default_factory=list,
        description="practical margins of the report's verdicts, per metric and cell (default 1% each)",
    )
    budget: str | None = Field(
        default=None, description="time the campaign may spend ('20m', '1200s'): boots a target MDE adds stop there"
    )
    executor: Literal["local", "ray"] = Field(
        default="local", description="where cells run: here, or as tasks on a Ray cluster (RAY_ADDRESS or --ray)"
    )
    boxes: dict[str, BoxSpec] = Field(
        default_factory=dict,
        max_length=MAX_BOXES,
        description="Ray only: every box runs the whole plan on nodes with its resources",
    )

    @property
    def root(self) -> Path:
        return self.path.parent

    def at(self, relative: str) -> Path:
        """A path of campaign.toml: $VARIABLES expanded (an unset one is one line), relative to the file's folder."""
        return (self.root / expand(relative, str(self.path))).resolve()


def expand(text: str, where: str) -> str:
    """`$NAME` / `${NAME}` from the environment, so one campaign.toml runs on hosts that keep things elsewhere."""
    for match in re.finditer(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", text):
        if match.group(1) not in os.environ:
            raise ConfigError(f"{where}: {text!r}: environment variable {match.group(1)} is not set")
    return os.path.expandvars(text)


def load_campaign_file(path: Path) -> CampaignFile:
    """Read and validate campaign.toml; suite options are checked by each suite (plan.py)."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such campaign file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    try:
        campaign = CampaignFile.model_validate({**raw, "path": path})
    except ValidationError as exc:
        raise ConfigError(f"{path}: {describe(exc.errors()[0])}") from None
    if not campaign.builds:
        raise ConfigError(f"{path}: builds: name at least one build")
    if not campaign.settings:
        raise ConfigError(f"{path}: settings: name at least one setting")
    if not campaign.suites:
        raise ConfigError(f"{path}: suites: name at least one suite")
    if campaign.ship is not None:
        check_gates(campaign.ship, list(campaign.builds), str(path))
        if campaign.ship.add_boots and campaign.budget is None:
            raise ConfigError(
                f'{path}: ship.add_boots: give the campaign a budget (e.g. budget = "20m") to add boots within'
            )
    if campaign.budget is not None:
        parse_budget(campaign.budget, str(path))
    return campaign
