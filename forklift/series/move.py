"""Moving a distribution to a new release: the pin in forklift.toml, the [series] contract, the manifest.

Shared by `flip --write` (the series re-cut in place) and by the export that
ends `forklift rebase` (the series exported from the rebased fork branch): both
rewrite forklift.toml in place, so comments and layout survive, and check the
result by parsing it again. It sits in series, below both fork and flip, so neither imports the other.
"""

from __future__ import annotations

import re
from pathlib import Path

from packaging.utils import parse_wheel_filename

from forklift.config import Config
from forklift.config.load import parse_config
from forklift.config.schema import GitPin, PypiPin
from forklift.errors import ForkliftError
from forklift.fsio import write_atomic
from forklift.series.gate import configured_overlay
from forklift.series.manifest import MANIFEST_FILE, load_manifest, render_manifest
from forklift.series.model import Series
from forklift.source import gitpin
from forklift.source.index import resolve_pypi_file


def new_pin(pin: PypiPin | GitPin, version: str, root: Path) -> PypiPin | GitPin:
    """The pin moved to `version`: for PyPI the same artifact kind (a wheel with the same tags) with the
    sha256 the index gives, for git the tag `version` bound to the commit it names now."""

    if isinstance(pin, GitPin):
        commit = gitpin.remote_tag_commit(gitpin.resolve_url(pin.url, root), version)
        return pin.model_copy(update={"tag": version, "commit": commit})

    if pin.filename and pin.filename.endswith(".whl"):  # the wheel for the pinned platform, not this machine's
        found = resolve_pypi_file(pin.package, version, wheel=True, tags=parse_wheel_filename(pin.filename)[3])
    else:
        found = resolve_pypi_file(pin.package, version)
    if not found.sha256:
        raise ForkliftError(
            f"the index gives no sha256 for {found.filename}: forklift will not pin an unverifiable file"
        )
    return pin.model_copy(
        update={"version": version, "sha256": found.sha256, "filename": found.filename if pin.filename else None}
    )


def rewrite_pin(text: str, pin: PypiPin | GitPin) -> str:
    """forklift.toml with the [upstream] values that move (version, sha256, filename; tag, commit)
    replaced in place, so comments and layout survive."""
    section = re.search(r"(?ms)^\[upstream\][^\n]*\n(.*?)(?=^\[|\Z)", text)
    if not section:
        raise ForkliftError("forklift.toml has no [upstream] table to rewrite (inline pins are not rewritten)")
    body = section.group(1)
    for key in ("version", "sha256", "filename") if isinstance(pin, PypiPin) else ("tag", "commit"):
        value = getattr(pin, key)
        line = re.compile(rf'(?m)^({key}\s*=\s*)"[^"\n]*"')
        if line.search(body):
            body = line.sub(lambda m, value=value: f'{m.group(1)}"{value}"', body, count=1)
        elif value is not None:
            raise ForkliftError(f"forklift.toml: [upstream] has no {key} line to rewrite")
    return text[: section.start(1)] + body + text[section.end(1) :]


def drop_from_contract(text: str, names: set[str]) -> str:
    """forklift.toml with `names` taken out of the [series] contract list in place (an entry alone on
    its line goes with the line and its comment), so comments and layout survive."""
    section = re.search(r"(?ms)^\[series\][^\n]*\n(.*?)(?=^\[|\Z)", text)
    array = section and re.search(r"(?ms)^contract\s*=\s*\[(.*?)\]", section.group(1))
    if not section or not array:
        return text
    items = array.group(1)
    for name in names:
        quoted = rf"""(?:"{re.escape(name)}"|'{re.escape(name)}')"""
        items = re.sub(rf"(?m)^[ \t]*{quoted}[ \t]*,?[ \t]*(?:#[^\n]*)?\n", "", items)
        items = re.sub(rf"{quoted}[ \t]*,[ \t]*|,?[ \t]*{quoted}", "", items)
    start = section.start(1)
    return text[: start + array.start(1)] + items + text[start + array.end(1) :]


def moved_toml(config: Config, pin: PypiPin | GitPin, gone: set[str]) -> str:
    """forklift.toml's text with the pin moved and the patches in `gone` out of the contract, checked."""
    text = drop_from_contract(rewrite_pin(config.path.read_text(encoding="utf-8"), pin), gone)
    moved = parse_config(text, config.path).data
    if moved.upstream != pin:
        raise ForkliftError(f"{config.path}: rewriting the pin did not give the new pin (edit it by hand)")
    if moved.series.contract != [name for name in config.data.series.contract if name not in gone]:
        raise ForkliftError(f"{config.path}: could not take {', '.join(sorted(gone))} out of [series] contract")
    return text


def follow_manifest(config: Config, fresh: Series) -> list[Path]:
    """The manifest after the series moved: files neither the series nor the overlay touches any more and
    patches the series no longer has (upstream carries their work) are no longer required; returns the file
    when it changed."""
    manifest = load_manifest(config.series_dir)
    if manifest is None:
        return []
    names = {patch.name for patch in fresh.patches}
    still = {p for patch in fresh.patches for p in patch.paths} | set(configured_overlay(config))
    files = [f for f in manifest.files if f in still]
    lines = {name: wanted for name, wanted in manifest.lines.items() if name in names}
    if files == list(manifest.files) and lines == manifest.lines:
        return []
    write_atomic(manifest.path, render_manifest(files, lines))
    return [config.series_dir / MANIFEST_FILE]


def pin_version(pin: PypiPin | GitPin) -> str:
    return pin.version if isinstance(pin, PypiPin) else pin.tag
