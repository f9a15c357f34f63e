"""The lost-work guard: a committed manifest of what the overlay must contain.

Regenerating a series (an export from a rebased fork branch, a flip) can drop
a fix without any patch failing: a rebase silently removes a file, a commit is
lost. `patches/MANIFEST.toml` names the files the overlay must touch and,
optionally per patch, lines it must add (the line that is the fix); `forklift
check` fails naming each file or line the series no longer carries.

    files = ["vllm/envs.py", "vllm/v1/core/sched/scheduler.py"]

    [patches."grammar-requests-skip-speculative-drafts.patch"]
    lines = ["request.spec_token_ids.clear()"]

Lines are compared without surrounding whitespace, so re-indenting a fix is
not lost work but deleting it is.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from forklift.config.toml import tomllib
from forklift.errors import ConfigError, ForkliftError
from forklift.fsio import write_atomic
from forklift.series.apply import Reader, apply_series
from forklift.series.model import Patch, Series

MANIFEST_FILE = "MANIFEST.toml"


@dataclass(frozen=True)
class Manifest:
    path: Path
    files: tuple[str, ...] = ()
    lines: dict[str, tuple[str, ...]] = field(default_factory=dict)  # patch name -> lines it must add


@dataclass(frozen=True)
class LostWork:
    subject: str  # the file or patch whose content went missing
    message: str


def parse_manifest(text: str, path: Path) -> Manifest:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    unknown = sorted(set(raw) - {"files", "patches"})
    if unknown:
        raise ConfigError(f"{path}: {unknown[0]}: unknown key (expected files, patches)")
    files = raw.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
        raise ConfigError(f"{path}: files: expected a list of tree paths")
    lines: dict[str, tuple[str, ...]] = {}
    patches = raw.get("patches", {})
    if not isinstance(patches, dict):
        raise ConfigError(f'{path}: patches: expected tables [patches."NAME"]')
    for name, table in patches.items():
        if not isinstance(table, dict) or set(table) - {"lines"}:
            raise ConfigError(f"{path}: patches.{name}: expected only `lines = [...]`")
        wanted = table.get("lines", [])
        if not isinstance(wanted, list) or not all(isinstance(x, str) and x.strip() for x in wanted):
            raise ConfigError(f"{path}: patches.{name}.lines: expected a list of non-blank lines")
        lines[name] = tuple(wanted)
    return Manifest(path=path, files=tuple(files), lines=lines)


def load_manifest(series_dir: Path) -> Manifest | None:
    """The series folder's MANIFEST.toml, or None when the distribution keeps none."""
    path = series_dir / MANIFEST_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return parse_manifest(text, path)


def _added_lines(patch: Patch) -> set[str]:
    return {line.decode("utf-8", "surrogateescape").strip() for fp in patch.files for h in fp.hunks for line in h.added}


def lost_work(manifest: Manifest, patches: Sequence[Patch], changed: Collection[str]) -> list[LostWork]:
    """What the manifest requires and the series no longer carries; `changed` = paths the overlay changes."""
    lost = []
    where = manifest.path.name
    for path in manifest.files:
        if path not in changed:
            lost.append(LostWork(path, f"the series no longer changes {path} ({where} requires it)"))
    by_name = {p.name: p for p in patches}
    for name, wanted in manifest.lines.items():
        patch = by_name.get(name)
        if patch is None:
            lost.append(LostWork(name, f"patch {name} is gone from the series ({where} requires its lines)"))
            continue
        added = _added_lines(patch)
        for line in wanted:
            if line.strip() not in added:
                lost.append(LostWork(name, f"{name} no longer adds the line {line.strip()!r} ({where})"))
    return lost


def changed_paths(read: Reader, series: Series, overlay_files: Mapping[str, bytes] | None = None) -> set[str]:
    """The files the series and then the `[overlay] dir` files change over the pristine tree, the set
    `forklift check` holds the manifest to: a file a patch names but the series leaves as upstream ships
    it (created, then deleted), or an overlay file identical to the tree's, is not."""
    results, overlay = apply_series(read, series.patches, series.applier)
    for result in results:
        if not result.applies:
            raise ForkliftError(
                f"{result.name}: {result.status} on the pristine tree, so what the series changes "
                "is not known (run `forklift check`)"
            )
    overlay.files.update(overlay_files or {})  # whole files over the series' result, as check lays them
    return set(overlay.changed())


def check_manifest(series_dir: Path, patches: Sequence[Patch], changed: Collection[str]) -> list[LostWork]:
    """The lost-work check `forklift check` runs: empty when there is no manifest or nothing was lost."""
    manifest = load_manifest(series_dir)
    return lost_work(manifest, patches, changed) if manifest else []


def render_manifest(changed: Collection[str], lines: dict[str, tuple[str, ...]] | None = None) -> str:
    """A manifest requiring today's touched files (and any per-patch lines kept from before)."""
    out = [
        "# Lost-work guard: `forklift check` fails when the series stops changing a file below",
        "# or a patch stops adding a listed line. Add the line that is the fix under its patch.",
        "files = [",
    ]
    out += [f"  {json.dumps(path)}," for path in sorted(changed)]
    out.append("]")
    for name, wanted in sorted((lines or {}).items()):
        out += ["", f"[patches.{json.dumps(name)}]", "lines = ["]
        out += [f"  {json.dumps(line)}," for line in wanted]
        out.append("]")
    return "\n".join(out) + "\n"


def write_manifest(series_dir: Path, changed: Collection[str]) -> Path:
    """(Re)write MANIFEST.toml requiring the `changed` files, keeping the per-patch lines of the one before."""
    old = load_manifest(series_dir)
    path = series_dir / MANIFEST_FILE
    write_atomic(path, render_manifest(changed, old.lines if old else None))
    return path
