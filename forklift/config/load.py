"""Read forklift.toml and turn every validation problem into one line naming file and key."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from forklift.config.schema import ForkliftToml
from forklift.config.toml import tomllib
from forklift.errors import ConfigError, describe_error, key_path
from forklift.fsio import utf8_text

MAX_NESTING = 32  # tomllib recurses per level; no forklift.toml needs more than a handful
MAX_CONFIG_BYTES = 16 << 20


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


def program_at(program: str, root: Path) -> str:
    """A program a file names: a bare name is a command on PATH; a path is relative to that file's folder, made
    absolute without following symlinks (a venv's python is a symlink to the system's: followed, it runs without
    the venv)."""
    if "/" not in program:
        return program
    return str((root / program).absolute())


_UNION_TAGS = ("pypi", "git", "path")  # pydantic puts a pin's tag in the location; it is not a key


def describe(error: Any) -> str:
    """One phrase for one pydantic error of forklift.toml; a pin's `source` tag gets its own words."""
    if error["type"] == "union_tag_invalid":
        loc = key_path(part for part in error["loc"] if part not in _UNION_TAGS)
        return f"{loc}.source: expected one of {error['ctx']['expected_tags']}, got {error['ctx']['tag']!r}"
    if error["type"] == "union_tag_not_found":
        loc = key_path(part for part in error["loc"] if part not in _UNION_TAGS)
        return f"{loc}.source: missing (one of {', '.join(repr(tag) for tag in _UNION_TAGS)})"
    return describe_error(error, hide=_UNION_TAGS)


def parse_config(text: str, path: Path) -> Config:
    """Parse and validate forklift.toml text (pure: no file access)."""
    _refuse_deep_nesting(text, path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:  # a shape the nesting scan missed: still one line
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
    try:
        data = ForkliftToml.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(describe(dict(e)) for e in exc.errors())
        raise ConfigError(f"{path}: {problems}") from None
    validate_config(data, path)
    return Config(path=path, data=data)


def load_config(path: Path) -> Config:
    if path.is_dir():
        path = path / "forklift.toml"
    return parse_config(decode_config(read_config_bytes(path), path), path.resolve())


def read_config_bytes(path: Path) -> bytes:
    """The bytes of forklift.toml; a missing file, a folder or a device is one line."""
    try:
        if not path.is_file():
            if path.is_dir():
                raise ConfigError(f"{path}: is a folder, not a file (give the path of forklift.toml)")
            if path.exists():
                raise ConfigError(f"{path}: not a regular file (give the path of forklift.toml)")
        with open(path, "rb") as handle:
            return handle.read(MAX_CONFIG_BYTES + 1)[: MAX_CONFIG_BYTES + 1]
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file (give --config or run in the distribution's folder)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def decode_config(raw: bytes, path: Path) -> str:
    """forklift.toml as text; a byte that is not UTF-8 is one line naming its line."""
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes; not a forklift.toml")
    return utf8_text(raw, path, "forklift.toml", ConfigError)


def _refuse_deep_nesting(text: str, path: Path) -> None:
    """Arrays and inline tables nested past MAX_NESTING are refused before tomllib recurses into them.

    A small scan that skips strings and comments; table headers (``[a.b]``, ``[[x]]``) count too,
    which only ever adds one or two levels.
    """
    depth, line, i, n = 0, 1, 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
        elif ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif ch in "\"'":
            quote = ch * 3 if text.startswith(ch * 3, i) else ch
            i += len(quote)
            while i < n and not text.startswith(quote, i):
                if text[i] == "\\" and ch == '"':
                    i += 1
                elif text[i] == "\n":
                    if len(quote) == 1:
                        break  # an unterminated string: tomllib reports it
                    line += 1
                i += 1
            i += len(quote)
            continue
        elif ch in "[{":
            depth += 1
            if depth > MAX_NESTING:
                raise ConfigError(f"{path}:{line}: arrays or tables nested more than {MAX_NESTING} deep")
        elif ch in "]}":
            depth = max(depth - 1, 0)
        i += 1


def validate_config(data: ForkliftToml, path: Path) -> None:
    """What the schema alone cannot see and `launch` would trip on: every profile's extends chain
    resolves without a cycle, no number is inf or nan, no flag or variable name is empty."""
    for name in data.profiles:
        if not name.isprintable():
            raise ConfigError(f"{path}: profiles.{name!r}: a profile name must be printable (no line break or tab)")
        try:
            extends_chain(data.profiles, name)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    for key, value in _leaves(data.model_dump(), ""):
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{path}: {key}: {value} is not a finite number")
    for name, profile in data.profiles.items():
        tables = [(f"profiles.{name}", profile.args, profile.env)]
        for axis, choices in profile.axes.items():
            tables += [(f"profiles.{name}.axes.{axis}.{c}", choice.args, choice.env) for c, choice in choices.items()]
        for where, args, env in tables:
            for table, keys in (("args", args), ("env", env)):
                if any(not key.strip() for key in keys):
                    raise ConfigError(f"{path}: {where}.{table}: an empty name {''!r} (it would become a bare flag)")


def extends_chain(profiles: dict[str, Any], name: str) -> list[str]:
    """`name` and the profiles it extends, nearest first; a cycle or an unknown parent is a ConfigError."""
    chain = [name]
    while (parent := profiles[chain[-1]].extends) is not None:
        if parent in chain:
            raise ConfigError(f"profiles: extends cycle {' -> '.join([*chain, parent])}")
        if parent not in profiles:
            known = ", ".join(sorted(profiles))
            raise ConfigError(f"profiles.{chain[-1]}.extends: unknown profile {parent!r} (profiles: {known})")
        chain.append(parent)
    return chain


def _leaves(value: object, key: str) -> Iterator[tuple[str, object]]:
    """(dotted key, value) for every scalar under `value`."""
    if isinstance(value, dict):
        for child, item in value.items():
            yield from _leaves(item, f"{key}.{child}" if key else str(child))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{key}[{index}]")
    else:
        yield key, value
