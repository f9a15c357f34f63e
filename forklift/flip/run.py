"""The edge of `forklift flip`: resolve and materialize the new release, triage, knobs, receipt, --write."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from forklift.config import Config
from forklift.config.schema import GitPin, PathPin, PypiPin
from forklift.engines import engine_adapter
from forklift.errors import ForkliftError, Interrupted, UsageError, interrupt_point
from forklift.flip.carriers import carrier
from forklift.flip.knobs import knob_deltas
from forklift.flip.report import FlipReport, FlipRow, KnobDelta
from forklift.flip.triage import PatchTriage, triage
from forklift.fork.base import base_tag
from forklift.fork.create import release_commit
from forklift.fork.export import BASE_COMMENT, recorded_base
from forklift.fork.pick import upstream_repo
from forklift.fork.repo import Git
from forklift.fsio import all_or_nothing, tree_reader, write_atomic
from forklift.receipts import new_receipt, receipts_folder, write_receipt
from forklift.series.apply import Overlay, Reader, apply_patch, apply_series
from forklift.series.files import upstream_drift
from forklift.series.gate import configured_overlay, configured_series
from forklift.series.model import SERIES_FILE, Series, series_folder_files
from forklift.series.move import follow_manifest, moved_toml, new_pin, pin_version
from forklift.series.render import series_patches_md
from forklift.source.cache import default_cache
from forklift.source.gitpin import has_commit, resolve_url, update_mirror
from forklift.source.materialize import Tree, materialize, materialize_ref
from forklift.source.requirements import RequirementChange, read_requirements, requirement_changes

if TYPE_CHECKING:
    from rich.console import Console


@dataclass(frozen=True)
class FlipResult:
    report: FlipReport
    receipt: Path
    written: list[Path]


def run_flip(
    config: Config,
    version: str,
    receipts_dir: Path | None = None,
    progress: Console | None = None,
    write: bool = False,
    fork: Git | None = None,
    git_ref: bool = False,
    upstream_repo: Path | None = None,
) -> FlipResult:
    """Flip to release `version`; with `git_ref`, `version` names a branch or tag of a git pin's repository
    (upstream main, say): which patches would break before the release, a dry run only. A retired patch is
    traced to the upstream commit that carries it in `upstream_repo` (a clone), or in a git pin's own repository."""

    pin = config.data.upstream
    if git_ref and not isinstance(pin, GitPin):
        raise UsageError(f"{config.path}: --git-ref needs a git pin (upstream.source = 'git'), not {pin.source!r}")
    if isinstance(pin, PathPin):
        raise UsageError(f"{config.path}: upstream.source is 'path': a local pin has no versions to flip to")
    if git_ref and write:
        raise UsageError("--git-ref is a dry run: a branch head is no release to pin (flip to its tag once released)")
    if version == (pin.version if isinstance(pin, PypiPin) else pin.tag):
        raise UsageError(f"{config.path}: the pin is already at {version}")
    series = configured_series(config, empty=True)
    old_tree = materialize(pin, config.root, progress=progress)
    target: PypiPin | GitPin
    if git_ref and isinstance(pin, GitPin):
        new_tree, commit = materialize_ref(pin, version, config.root, progress=progress)
        target = pin.model_copy(update={"tag": version, "commit": commit})
    else:
        target = new_pin(pin, version, config.root)
        new_tree = materialize(target, config.root, progress=progress)
    traced = upstream_range(config, target, upstream_repo)  # a wrong clone is named before the triage runs
    old_read, new_read = tree_reader(old_tree.path), tree_reader(new_tree.path)
    overlay_files = configured_overlay(config)  # lands over both releases' patched trees
    verdicts, new_overlay = triage(old_read, new_read, series.patches, series.applier)
    _, old_overlay = apply_series(old_read, series.patches, series.applier)
    unlanded = sum(1 for t in verdicts if not t.landed)
    knobs: list[KnobDelta]
    skipped: str | None
    if config.data.engine.kind == "generic":
        knobs, skipped = [], "not compared: engine.kind is generic (no knob registry)"
    elif unlanded:  # a registry read off a tree the series did not land on reports the series' absence
        knobs, skipped = [], f"not computed: {unlanded} patch(es) did not land on {new_tree.label}"
    else:
        knobs, skipped = knob_deltas(
            old_tree,
            new_tree,
            {**old_overlay.files, **overlay_files},
            {**new_overlay.files, **overlay_files},
            engine_adapter(config.data.engine.kind),
            default_cache(),
        )
    requirements, requirements_skipped = compared_requirements(config, old_tree, new_tree)
    report = FlipReport(
        old=old_tree.label,
        new=new_tree.label,
        new_pin=target.model_dump(exclude_none=True),
        patches=with_skipped(
            [
                FlipRow.of(t, p.header.description, " ".join(p.header.get("retires-when").split()))
                for t, p in zip(verdicts, series.patches, strict=False)
            ],
            series,
        ),
        knobs=knobs,
        knobs_skipped=skipped,
        overlay_changed=[str(d) for d in upstream_drift(old_read, new_read, list(overlay_files))],
        requirements=requirements,
        requirements_skipped=requirements_skipped,
    )
    trace_retired(report, series, old_read, *traced)
    written = (
        write_flip(config, series, target, verdicts, report, new_tree, fork) if write and not report.blocked else []
    )
    receipt = new_receipt(
        "flip",
        status="failed" if report.blocked else "ok",
        pin=target.model_dump(),
        body={**report.model_dump(), "written": [str(p) for p in written]},
    )
    path = write_receipt(receipt, receipts_folder(receipts_dir, config.path))
    return FlipResult(report=report, receipt=path, written=written)


def upstream_range(
    config: Config, target: PypiPin | GitPin, clone: Path | None
) -> tuple[Git, str, str] | tuple[None, None, None]:
    """(repository, old commit, new commit) between the two pins: the clone's release tags (v0.32.0 or 0.32.0)
    or the git pin's commits; nothing without a git upstream."""
    pin = config.data.upstream
    if clone is None and isinstance(pin, GitPin) and isinstance(target, GitPin):
        url, cache = resolve_url(pin.url, config.root), default_cache()
        mirror = cache.mirror_path(url)
        if not (mirror.is_dir() and all(has_commit(mirror, c) for c in (pin.commit, target.commit))):
            mirror = update_mirror(url, cache)  # trees in the cache need no mirror: fetch it for the history
        return Git(mirror), pin.commit, target.commit
    if clone is None or isinstance(pin, PathPin):
        return None, None, None
    git = upstream_repo(clone, "--upstream-repo")
    ends = []
    for side in (pin, target):
        if isinstance(side, GitPin):
            ends.append(git.commit_of(side.commit, f"the pinned commit of {side.tag}"))
            continue
        version = pin_version(side)
        found = git.resolve(f"refs/tags/v{version}") or git.resolve(f"refs/tags/{version}")
        if found is None:
            raise ForkliftError(f"--upstream-repo {clone}: no tag v{version} (or {version}) for release {version}")
        ends.append(found)
    return git, ends[0], ends[1]


def trace_retired(
    report: FlipReport, series: Series, read: Reader, git: Git | None, old: str | None, new: str | None
) -> None:
    """Name, on every retired row, the upstream commit in old..new whose patch id is the patch's (each patch's
    change taken on the old release `read`, as the series makes it)."""
    if git is None or old is None or new is None:
        return
    report.upstream_range = f"{old[:12]}..{new[:12]}"
    retired = {row.name for row in report.patches if row.verdict in ("already-upstream", "retire-candidate")}
    overlay = Overlay(read)
    for patch in series.patches:
        result = apply_patch(overlay.read, patch, series.applier)
        if patch.name in retired:
            change = {path: (overlay.read(path), content) for path, content in result.files.items()}
            found = carrier(git, old, new, patch, change)
            row = next(row for row in report.patches if row.name == patch.name)
            row.carried_by = f"{found[:12]} {git.text('log', '-1', '--format=%s', found).strip()}" if found else None
        overlay.files.update(result.files)


def compared_requirements(config: Config, old: Tree, new: Tree) -> tuple[list[RequirementChange], str | None]:
    """The engine's own requirement changes from `old` to `new`, or why they were not compared."""
    kind = config.data.engine.kind
    adapter = engine_adapter(kind) if kind != "generic" else None
    before, after = read_requirements(old.path, adapter), read_requirements(new.path, adapter)
    if before is None or after is None:
        return [], f"{(old if before is None else new).label} declares no requirements forklift reads"
    return requirement_changes(before, after, adapter), None


def with_skipped(rows: list[FlipRow], series: Series) -> list[FlipRow]:
    """The skipped entries back in their place in the series, as rows that say why."""
    out = list(rows)
    for offset, skip in enumerate(series.skipped):
        row = FlipRow(name=skip.name, verdict="skipped", skipped=skip.reason, files=[], hunks=[])
        out.insert(skip.after + offset, row)
    return out


def write_flip(
    config: Config,
    series: Series,
    pin: PypiPin | GitPin,
    verdicts: list[PatchTriage],
    report: FlipReport,
    new_tree: Tree,
    fork: Git | None = None,
) -> list[Path]:
    """Move the pin and the series; refused (nothing written) when any patch does not apply as it is.

    A series exported from a fork names its base commit; with the fork (`--repo`), the new release's
    pristine commit is added there (tagged as upstream tags it) and the base line moves to it;
    without, nothing is written: the base line would name the old release."""
    if report.blocked:
        names = ", ".join(p.name for p in report.blocked)
        raise ForkliftError(f"not written: {len(report.blocked)} patch(es) do not apply on {report.new}: {names}")
    old_base = recorded_base(config.series_dir)
    if old_base and fork is None:
        raise ForkliftError(
            f"not written: {config.series_dir / SERIES_FILE} names the fork base {old_base[:12]} of {report.old}: "
            f"pass --repo FORK to move it too, or move the fork: `forklift -c {config.root} rebase "
            f"{pin_version(pin)} --repo FORK --branch BRANCH`, then `forklift -c {config.root} export --from BRANCH "
            "--repo FORK`"
        )
    if verdicts and all(t.verdict == "already-upstream" for t in verdicts):
        raise ForkliftError(f"not written: upstream {report.new} carries every patch; retire the series by hand")
    retired = {t.name for t in verdicts if t.verdict == "already-upstream"}
    recut = {t.name for t in verdicts if t.refreshed is not None}
    toml_text = moved_toml(config, pin, retired)
    new_base = None
    old_pin = config.data.upstream
    if fork is not None:  # also for a series with no base line yet: the fork's branches follow the pin by its tag
        fork.ensure_repo()
        if isinstance(pin, GitPin):
            new_base = fork.commit_of(pin.commit, f"upstream's {pin.tag}")
        elif not isinstance(old_pin, GitPin):
            parent = old_base or fork.resolve(f"refs/tags/{base_tag(old_pin)}")
            new_base = release_commit(fork, new_tree.path, base_tag(pin), new_tree.label, parent=parent)
    series_file = config.series_dir / SERIES_FILE
    series_lines = []
    for raw in series_file.read_text(encoding="utf-8").splitlines():
        if new_base and BASE_COMMENT.fullmatch(raw):
            raw = f"# forklift-base: {new_base}"
        entry, sep, comment = raw.partition("#")
        name = entry.split()
        if name and name[0] in retired:
            carried = next(
                (f": commit {r.carried_by}" for r in report.patches if r.name == name[0] and r.carried_by), ""
            )
            raw = f"# retired: {name[0]} (already upstream in {report.new}{carried})"
        elif name and name[0] in recut:  # re-cut with a/ b/ prefixes: -p1, the series default
            raw = re.sub(r"\s+-p\d+(?=\s|$)", "", entry) + sep + comment
        series_lines.append(raw)
    written = [config.path, series_file]
    files = [config.path, *series_folder_files(config.series_dir)]
    try:
        with all_or_nothing([*files, *([config.patches_md] if config.patches_md is not None else [])]):
            write_atomic(config.path, toml_text)
            interrupt_point("flip.pin")
            write_atomic(series_file, "\n".join(series_lines) + "\n")
            for t in verdicts:
                if t.refreshed is not None:
                    write_atomic(config.series_dir / t.name, t.refreshed)
                    written.append(config.series_dir / t.name)
            for gone in sorted(retired):
                (config.series_dir / gone).unlink()
            fresh = configured_series(config, empty=True)
            written += follow_manifest(config, fresh)
            if config.patches_md is not None:
                write_atomic(config.patches_md, series_patches_md(fresh))
                written.append(config.patches_md)
    except KeyboardInterrupt:
        kept = f" (release {report.new} stays in the fork as {new_base[:12]})" if new_base else ""
        raise Interrupted(
            f"forklift flip stopped by Ctrl-C: {config.path.name}, the series and PATCHES.md are as they were{kept}"
        ) from None
    return written
