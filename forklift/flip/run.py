"""The edge of `forklift flip`: resolve and materialize the new release, triage, knobs, receipt, --write."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from forklift.config import Config
from forklift.config.load import parse_config
from forklift.config.schema import GitPin, PathPin, PypiPin
from forklift.engines import adapter
from forklift.errors import ForkliftError, UsageError
from forklift.flip.knobs import knob_deltas
from forklift.flip.report import FlipReport, FlipRow, KnobDelta
from forklift.flip.triage import PatchTriage, triage
from forklift.fsio import tree_reader, write_atomic
from forklift.receipts import new_receipt, receipts_folder, write_receipt
from forklift.series.engine import apply_series
from forklift.series.manifest import MANIFEST_FILE, load_manifest, render_manifest
from forklift.series.model import SERIES_FILE, Series, load_series
from forklift.series.render import patches_md


@dataclass(frozen=True)
class FlipResult:
    report: FlipReport
    receipt: Path
    written: list[Path]


def new_pin(pin: PypiPin | GitPin, version: str, root: Path) -> PypiPin | GitPin:
    """The pin moved to `version`: for PyPI the same artifact kind (a wheel with the same tags) with the
    sha256 the index gives, for git the tag `version` bound to the commit it names now."""
    from packaging.utils import parse_wheel_filename

    from forklift.source import git
    from forklift.source.index import resolve_pypi_file

    if isinstance(pin, GitPin):
        commit = git.remote_tag_commit(git.resolve_url(pin.url, root), version)
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


def run_flip(
    config: Config, version: str, receipts_dir: Path | None = None, progress=None, write: bool = False
) -> FlipResult:
    from forklift.source import default_cache, materialize

    pin = config.data.upstream
    if isinstance(pin, PathPin):
        raise UsageError(f"{config.path}: upstream.source is 'path': a local pin has no versions to flip to")
    if version == (pin.version if isinstance(pin, PypiPin) else pin.tag):
        raise UsageError(f"{config.path}: the pin is already at {version}")
    series = load_series(config.series_dir)
    target = new_pin(pin, version, config.root)
    old_tree = materialize(pin, config.root, progress=progress)
    new_tree = materialize(target, config.root, progress=progress)
    old_read, new_read = tree_reader(old_tree.path), tree_reader(new_tree.path)
    verdicts, new_overlay = triage(old_read, new_read, series.patches)
    _, old_overlay = apply_series(old_read, series.patches)
    knobs: list[KnobDelta]
    skipped: str | None
    if config.data.engine.kind == "generic":
        knobs, skipped = [], "not compared: engine.kind is generic (no knob registry)"
    else:
        knobs, skipped = knob_deltas(
            old_tree, new_tree, old_overlay.files, new_overlay.files, adapter(config.data.engine.kind), default_cache()
        )
    report = FlipReport(
        old=old_tree.label,
        new=new_tree.label,
        new_pin=target.model_dump(exclude_none=True),
        patches=[FlipRow.of(t, p.header.description) for t, p in zip(verdicts, series.patches, strict=True)],
        knobs=knobs,
        knobs_skipped=skipped,
    )
    written = write_flip(config, series, target, verdicts, report) if write and not report.blocked else []
    receipt = new_receipt(
        "flip",
        status="failed" if report.blocked else "ok",
        pin=target.model_dump(),
        body={**report.model_dump(), "written": [str(p) for p in written]},
    )
    path = write_receipt(receipt, receipts_folder(receipts_dir, config.path))
    return FlipResult(report=report, receipt=path, written=written)


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


def write_flip(
    config: Config, series: Series, pin: PypiPin | GitPin, verdicts: list[PatchTriage], report: FlipReport
) -> list[Path]:
    """Move the pin and the series; refused (nothing written) when any patch conflicts or lost its file."""
    if report.blocked:
        names = ", ".join(p.name for p in report.blocked)
        raise ForkliftError(f"not written: {len(report.blocked)} patch(es) do not apply on {report.new}: {names}")
    if all(t.verdict == "already-upstream" for t in verdicts):
        raise ForkliftError(f"not written: upstream {report.new} carries every patch; retire the series by hand")
    retired = {t.name for t in verdicts if t.verdict == "already-upstream"}
    recut = {t.name for t in verdicts if t.refreshed is not None}
    toml_text = drop_from_contract(rewrite_pin(config.path.read_text(encoding="utf-8"), pin), retired)
    moved = parse_config(toml_text, config.path).data
    if moved.upstream != pin:
        raise ForkliftError(f"{config.path}: rewriting the pin did not give the new pin (edit it by hand)")
    if moved.series.contract != [name for name in config.data.series.contract if name not in retired]:
        raise ForkliftError(
            f"{config.path}: could not take the retired patches out of [series] contract (edit it by hand)"
        )
    series_file = config.series_dir / SERIES_FILE
    series_lines = []
    for raw in series_file.read_text(encoding="utf-8").splitlines():
        entry, sep, comment = raw.partition("#")
        words = entry.split()
        if words and words[0] in retired:
            raw = f"# retired: {words[0]} (already upstream in {report.new})"
        elif words and words[0] in recut:  # re-cut with a/ b/ prefixes: -p1, the series default
            raw = re.sub(r"\s+-p\d+(?=\s|$)", "", entry) + sep + comment
        series_lines.append(raw)
    written = [config.path, series_file]
    write_atomic(config.path, toml_text)
    write_atomic(series_file, "\n".join(series_lines) + "\n")
    for t in verdicts:
        if t.refreshed is not None:
            write_atomic(config.series_dir / t.name, t.refreshed)
            written.append(config.series_dir / t.name)
    for name in sorted(retired):
        (config.series_dir / name).unlink()
    fresh = load_series(config.series_dir)
    written += _drop_retired_from_manifest(config, fresh, retired)
    if config.patches_md is not None:
        write_atomic(config.patches_md, patches_md(list(fresh.patches), list(fresh.retired)))
        written.append(config.patches_md)
    return written


def _drop_retired_from_manifest(config: Config, fresh: Series, retired: set[str]) -> list[Path]:
    """Upstream now carries the retired patches' work: stop requiring the series to carry it."""
    manifest = load_manifest(config.series_dir)
    if manifest is None or not retired:
        return []
    still = {p for patch in fresh.patches for p in patch.paths}
    files = [f for f in manifest.files if f in still]
    lines = {name: wanted for name, wanted in manifest.lines.items() if name not in retired}
    if files == list(manifest.files) and lines == manifest.lines:
        return []
    write_atomic(manifest.path, render_manifest(files, lines))
    return [config.series_dir / MANIFEST_FILE]
