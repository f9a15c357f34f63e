"""Read forklift.toml and turn every validation problem into one line naming file and key."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from forklift.config.schema import ForkliftToml
from forklift.config.toml import tomllib
from forklift.errors import ConfigError


@dataclass(frozen=True)
class Config:
    """A validated forklift.toml and the folder its relative paths resolve against."""

    path: Path
    data: ForkliftToml

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def series_dir(self) -> Path:
        return self.root / self.data.series.dir

    @property
    def overlay_dir(self) -> Path | None:
        overlay = self.data.overlay
        return self.root / overlay.dir if overlay else None

    @property
    def digests_file(self) -> Path:
        """The sha256sum file check holds the patch files to (it need not exist unless configured)."""
        name = self.data.series.digests
        return self.root / name if name else self.series_dir / "SHA256SUMS"

    @property
    def patches_md(self) -> Path | None:
        name = self.data.series.patches_md
        return self.root / name if name else None


def describe(error: dict) -> str:
    """One readable phrase for one pydantic error: the dotted key and what was expected."""
    loc = ".".join(str(part) for part in error["loc"] if not _is_union_tag(part))
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"{loc}: unknown key"
    if kind == "missing":
        return f"{loc}: missing (required)"
    if kind == "union_tag_invalid":
        return f"{loc}.source: expected one of {error['ctx']['expected_tags']}, got {error['ctx']['tag']!r}"
    if kind == "union_tag_not_found":
        return f"{loc}.source: missing (one of 'pypi', 'git', 'path')"
    return f"{loc}: {error['msg']} (got {error['input']!r})"


def _is_union_tag(part: object) -> bool:
    return part in ("pypi", "git", "path")


def parse_config(text: str, path: Path) -> Config:
    """Parse and validate forklift.toml text (pure: no file access)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    try:
        data = ForkliftToml.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(describe(e) for e in exc.errors())
        raise ConfigError(f"{path}: {problems}") from None
    return Config(path=path, data=data)


def load_config(path: Path) -> Config:
    if path.is_dir():
        path = path / "forklift.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file (give --config or run in the distribution's folder)") from None
    return parse_config(text, path.resolve())
