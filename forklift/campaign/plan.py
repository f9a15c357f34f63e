"""The campaign's plan (pure): which boot runs when, for which build and setting, with which suites.

Order per setting and repeat: the builds forward ("AB"), or forward then back ("ABBA"), so
a drift of the box over the session lands on both sides alike. With the A/A control the
first build runs twice per setting (ABBA already does; AB gets a closing A), and those two
copies are marked aa = 1 and 2: their shift is the noise floor the A/B rows are read against.
With `[boxes]` (a Ray campaign) every box runs that whole plan, its keys prefixed with the box's
name, so each box has its own A/A control and its own rows.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from forklift.campaign.schema import MAX_BOOTS, CampaignFile
from forklift.campaign.suites import CampaignSuite, LadderOptions, SuiteOptions, suite
from forklift.config import Config
from forklift.config.load import describe
from forklift.errors import ConfigError, ForkliftError
from forklift.ladder import parse_axis
from forklift.launch.plan import make_launch_plan
from forklift.launch.resolve import setting_name


@dataclass(frozen=True)
class Setting:
    profile: str
    sets: tuple[str, ...]
    name: str  # the label receipts carry (launch's setting_name)


@dataclass(frozen=True)
class Slot:
    """One boot of one build in one setting, every served suite run against it."""

    key: str
    repeat: int
    position: int
    build: str
    setting: Setting
    aa: int | None
    box: str | None = None  # the [boxes] entry it runs on (a Ray campaign), else wherever the campaign runs


@dataclass(frozen=True)
class Prepared:
    """A suite's options as campaign.toml gave them (name, settings) and as its run() takes them."""

    given: SuiteOptions
    ready: Any

    @property
    def title(self) -> str | None:
        return getattr(self.given, "name", None)

    def runs_on(self, setting: str) -> bool:
        return self.given.runs_on(setting)


@dataclass(frozen=True)
class LadderJob:
    key: str
    build: str
    setting: Setting
    suite: CampaignSuite
    options: Prepared
    box: str | None = None


@dataclass(frozen=True)
class CampaignPlan:
    slots: list[Slot]
    ladders: list[LadderJob]
    served: list[tuple[CampaignSuite, Prepared]]
    warmups: list[Slot]  # unmeasured boots before the slots: `warmup_boots` of the first build per setting

    @property
    def keys(self) -> list[str]:
        return [s.key for s in self.slots] + [j.key for j in self.ladders]

    @property
    def cells(self) -> list[Cell]:
        """Every cell in the order a local campaign runs them: the boots, then the ladders."""
        return [*self.slots, *self.ladders]


Cell = Slot | LadderJob


def key_part(text: str) -> str:
    """A name made safe for a cell key (a folder name): runs of other characters become one underscore."""
    return re.sub(r"[^A-Za-z0-9.=+-]+", "_", text).strip("_")


def settings(campaign: CampaignFile, config: Config) -> list[Setting]:
    """Every setting: each entry's profile with each combination of its axis choices."""

    out = []
    for index, spec in enumerate(campaign.settings):
        axes = list(spec.axes.items())
        for choices in itertools.product(*(values for _, values in axes)):
            sets = (*spec.set, *(f"{axis}={choice}" for (axis, _), choice in zip(axes, choices, strict=False)))
            try:
                resolved = make_launch_plan(config, spec.profile, list(sets), check=False).resolved
            except ForkliftError as exc:
                raise ConfigError(f"{campaign.path}: settings[{index}]: {exc}") from None
            out.append(Setting(spec.profile, sets, setting_name(resolved)))
    names = [s.name for s in out]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise ConfigError(f"{campaign.path}: settings: {duplicate!r} is listed twice")
    if campaign.shipped_defaults:
        out += [
            Setting(profile, (), name)
            for profile, name in shipped_defaults(campaign, config).items()
            if name not in names
        ]
    return out


def shipped_defaults(campaign: CampaignFile, config: Config) -> dict[str, str]:
    """Each profile the settings name -> the setting its users run (no --set: the profile's own defaults).

    A campaign that measures only overridden settings never boots what ships (a seed campaign measured
    every arm at a lower GPU memory fraction than the one shipped, which then failed for its users)."""
    out: dict[str, str] = {}
    for index, spec in enumerate(campaign.settings):
        if spec.profile not in out:
            try:
                resolved = make_launch_plan(config, spec.profile, [], check=False).resolved
            except ForkliftError as exc:
                raise ConfigError(
                    f"{campaign.path}: settings[{index}]: profile {spec.profile} as shipped: {exc}"
                ) from None
            out[spec.profile] = setting_name(resolved)
    return out


def suite_options(campaign: CampaignFile, config: Config) -> list[tuple[CampaignSuite, Prepared]]:
    out = []
    for index, raw in enumerate(campaign.suites):
        where = f"{campaign.path}: suites[{index}]"
        entry = dict(raw)
        kind = entry.pop("kind", None)
        if not isinstance(kind, str):
            raise ConfigError(f"{where}.kind: missing (one of bench, ladder, ...)")
        try:
            chosen = suite(kind)
        except ForkliftError as exc:
            raise ConfigError(f"{where}.kind: {exc}") from None
        try:
            options = chosen.options.model_validate(entry)
            ready = chosen.prepare(options, config, campaign.root) if chosen.prepare else options
        except ValidationError as exc:
            raise ConfigError(f"{where}.{describe(exc.errors()[0])}") from None
        except ForkliftError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        out.append((chosen, Prepared(options, ready)))
    return out


def build_order(builds: list[str], order: str, aa: bool) -> list[tuple[str, int | None]]:
    """One setting-repeat's boots: (build, A/A mark); the first build's first two copies are marked when aa."""
    sequence = builds + builds[::-1] if order == "ABBA" else list(builds)
    if aa and sequence.count(builds[0]) < 2:
        sequence.append(builds[0])
    marks, seen = [], 0
    for build in sequence:
        mark = None
        if aa and build == builds[0] and seen < 2:
            seen += 1
            mark = seen
        marks.append((build, mark))
    return marks


def planned_boots(campaign: CampaignFile, chosen: list[tuple[CampaignSuite, Prepared]]) -> int:
    """Every boot the plan makes, counted before one cell is made (the axes' product alone may be astronomic)."""
    settings_count = sum(math.prod(len(choices) for choices in spec.axes.values()) for spec in campaign.settings)
    boxes = max(len(campaign.boxes), 1)
    boots = 0
    if any(not s.boots for s, _ in chosen):
        per_setting = len(build_order(list(campaign.builds), campaign.order, campaign.aa))
        boots += settings_count * (boxes * campaign.repeats * per_setting + campaign.warmup_boots)
    for s, options in chosen:
        if s.boots:  # a ladder boots once per value of its axis, per box, setting and build
            given = options.given
            values = len(parse_axis(given.axis).values) if isinstance(given, LadderOptions) else 1
            boots += boxes * settings_count * len(campaign.builds) * values
    return boots


def make_campaign_plan(campaign: CampaignFile, config: Config) -> CampaignPlan:
    chosen = suite_options(campaign, config)
    try:
        boots = planned_boots(campaign, chosen)
    except ForkliftError as exc:
        raise ConfigError(f"{campaign.path}: suites: {exc}") from None
    if boots > MAX_BOOTS:
        raise ConfigError(
            f"{campaign.path}: repeats, settings, builds, boxes and suites plan {boots:,} boots,"
            f" more than {MAX_BOOTS:,} in one campaign"
        )
    served = [(s, o) for s, o in chosen if not s.boots]
    booting = [(s, o) for s, o in chosen if s.boots]
    builds = list(campaign.builds)
    boxes: list[str | None] = [*campaign.boxes] or [None]
    slots = []
    all_settings = settings(campaign, config)
    if served:
        for box, repeat in itertools.product(boxes, range(1, campaign.repeats + 1)):
            for setting in all_settings:
                for position, (build, mark) in enumerate(build_order(builds, campaign.order, campaign.aa), 1):
                    key = f"{_box_prefix(box)}r{repeat}-{key_part(setting.name)}-{position}-{key_part(build)}"
                    slots.append(Slot(key, repeat, position, build, setting, mark, box))
    known = {s.name for s in all_settings}
    for index, (_, options) in enumerate(chosen):
        unknown = sorted(set(getattr(options.given, "settings", None) or ()) - known)
        if unknown:
            raise ConfigError(
                f"{campaign.path}: suites[{index}].settings: no setting {unknown[0]!r} (settings: {', '.join(sorted(known))})"
            )
    ladders = [
        LadderJob(
            f"{_box_prefix(box)}{s.name}{i + 1}-{key_part(setting.name)}-{key_part(build)}",
            build,
            setting,
            s,
            options,
            box,
        )
        for box in boxes
        for i, (s, options) in enumerate(booting)
        for setting in all_settings
        if options.runs_on(setting.name)
        for build in builds
    ]
    warmups = [
        Slot(f"w{n}-{key_part(setting.name)}-{key_part(builds[0])}", 0, n, builds[0], setting, None)
        for setting in (all_settings if served else [])
        for n in range(1, campaign.warmup_boots + 1)
    ]
    return CampaignPlan(slots, ladders, served, warmups)


def _box_prefix(box: str | None) -> str:
    return f"{key_part(box)}-" if box else ""
