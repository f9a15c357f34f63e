"""Pick an upstream commit into the series, as `stg pick` does for a stack: one DEP-3 patch, checked first.

The commit's change is rendered as export renders a fork commit (the series applier's own diff writer), limited
to the pinned tree's paths and the `[series] root`: an sdist pin keeps what the release ships, a wheel pin only
its package. Its header says where it came from: `Origin:` (upstream, or backport when the change had to be cut
down or moved to apply) and `Applied-Upstream:` (the first release tag that holds the commit, and the commit).
Nothing is written unless the series with the pick passes the gate's checks on the pinned tree.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import Path

from forklift.config import Config
from forklift.errors import ForkliftError, UsageError
from forklift.fork.export import commit_diff, numbered_name, render_header
from forklift.fork.repo import Git
from forklift.fork.upstream import UpstreamPaths
from forklift.fsio import write_atomic
from forklift.series.apply import Reader, apply_patch, apply_series
from forklift.series.check import CheckReport, check_series
from forklift.series.headers import split_trailers
from forklift.series.model import (
    SERIES_FILE,
    Series,
    parse_patch,
    parse_series_file,
    read_series_part,
    split_header,
    unrooted,
    with_root,
)
from forklift.series.render import file_diff, series_patches_md

_GITHUB = re.compile(
    r"^(?:https://(?:[^/@]+@)?github\.com/|git@github\.com:|ssh://git@github\.com/)([\w.-]+/[\w.-]+?)(?:\.git)?/?$"
)
_RELEASE_TAG = re.compile(r"^v?(\d+(?:\.\d+)+)$")


@dataclass(frozen=True)
class Pick:
    name: str
    commit: str
    subject: str
    text: str  # the patch file
    dropped: tuple[str, ...]  # the commit's paths outside the pinned tree or the [series] root
    moved: bool  # its hunks landed at an offset on the pin and the series: re-cut at the lines they land on
    release: str | None  # the first release tag that holds the commit
    report: CheckReport  # the gate's checks of the series with the pick


def upstream_repo(repo: Path, option: str = "--repo") -> Git:
    """The local clone of upstream `option` names, or one line saying why it is none."""
    if not repo.is_dir():
        raise UsageError(f"{option} {repo}: no such folder (a local clone of upstream)")
    git = Git(repo)
    if git.run("rev-parse", "--git-dir", check=False).returncode != 0:
        raise UsageError(f"{option} {repo}: not a git repository (a local clone of upstream)")
    return git


def single_parent_commit(git: Git, rev: str) -> tuple[str, str]:
    """(commit, subject) of `rev`; a merge or a root commit is refused: a patch is one parent's change."""
    commit = git.resolve(rev)
    if commit is None:
        raise ForkliftError(f"{git.repo}: revision {rev!r} does not exist")
    line = git.text("rev-list", "--parents", "-n", "1", commit).split()
    subject = git.text("log", "-1", "--format=%s", commit).strip()
    if len(line) > 2:
        raise ForkliftError(
            f"commit {commit[:12]} ({subject}) is a merge commit: pick the commits it merges, one at a time"
        )
    if len(line) < 2:
        raise ForkliftError(f"commit {commit[:12]} ({subject}) is a root commit: it has no parent to diff against")
    return commit, subject


def first_release(git: Git, commit: str) -> str | None:
    """The earliest release tag (v1.2.3 or 1.2.3) that holds `commit`, as its version; None before any."""
    tags = git.text("tag", "--contains", commit, "--sort=version:refname").split()
    versions = [m.group(1) for tag in tags if (m := _RELEASE_TAG.match(tag))]
    return versions[0] if versions else None


def commit_place(git: Git, commit: str) -> str:
    """Where a reader finds the commit: its page when the clone's origin is on GitHub, else `commit:SHA` (DEP-3)."""
    url = git.text("config", "--get", "remote.origin.url", check=False).strip()
    m = _GITHUB.match(url)  # only the owner/name is kept: a token in the URL never reaches a patch
    return f"https://github.com/{m.group(1)}/commit/{commit}" if m else f"commit:{commit}"


def pick_commit(config: Config, git: Git, rev: str, tree: Path, read: Reader) -> Pick:
    """The commit `rev` of upstream's clone as the series' next patch, checked on the pinned tree `tree`."""
    from forklift.series.gate import configured_overlay

    commit, subject = single_parent_commit(git, rev)
    series = _series(config)
    root = series.root
    for patch in series.patches:
        if commit in split_header(patch.text)[0]:
            raise ForkliftError(f"commit {commit[:12]} ({subject}) is already in the series as {patch.name}")
    diff, _, dropped, _ = commit_diff(git, commit, UpstreamPaths.from_tree(tree), root)
    if not diff:
        where = f"the [series] root {root}/" if root else "the pinned tree"
        touched = ", ".join(dropped) or "no file's content"
        raise ForkliftError(f"commit {commit[:12]} ({subject}) changes nothing in {where}: it touches {touched}")
    name = numbered_name(subject, [p.name for p in series.patches] + [s.name for s in series.skipped])
    patch = with_root(parse_patch(name, diff), root)
    _, overlay = apply_series(read, series.patches, series.applier)
    landed = apply_patch(overlay.read, patch, series.applier)
    if landed.status not in ("exact", "offset"):
        raise ForkliftError(
            f"commit {commit[:12]} ({subject}) does not apply on the pin and the series: {landed.status}: "
            + "; ".join(landed.reasons())
        )
    moved = landed.status == "offset"
    if moved:  # the same change, its hunk lines where they land, so the series applies at fuzz 0 and no offset
        diff = "".join(
            file_diff(unrooted(path, root), overlay.read(path), landed.files[path]) for path in sorted(landed.files)
        )
    meta = git.text("log", "-1", "--format=%an <%ae>%x00%B", commit)
    author, message = meta.split("\0", 1)
    body, trailers = split_trailers(message.partition("\n")[2].split("\n"))
    release = first_release(git, commit)
    place = commit_place(git, commit)
    kind = "backport" if moved or dropped else "upstream"
    fields = [("Origin", f"{kind}, {place}"), ("Applied-Upstream", f"{release}, {place}" if release else place)]
    text = render_header(subject, body, author, fields + trailers) + diff
    picked = with_root(parse_patch(name, text), root)
    extended = replace(
        series,
        patches=(*series.patches, picked),
        digests={**series.digests, name: hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()},
    )
    report = check_series(extended, read, list(config.data.series.contract), overlay_files=configured_overlay(config))
    if report.findings:
        first = report.findings[0]
        raise ForkliftError(
            f"not written: the series with {name} fails the check: {first.check}: {first.subject}: {first.message}"
        )
    return Pick(name, commit, subject, text, dropped, moved, release, report)


def _series(config: Config) -> Series:
    """The configured series; an empty one where `series` lists no patch yet (a pick may be the first)."""
    from forklift.series.gate import configured_series

    series_file = config.series_dir / SERIES_FILE
    if series_file.is_file() and parse_series_file(
        read_series_part(series_file, "the series file").decode("utf-8", "surrogateescape"), series_file
    ):
        return configured_series(config)
    conf = config.data.series
    return Series(folder=config.series_dir, root=conf.root, applier=conf.applier)


def write_pick(config: Config, pick: Pick) -> list[Path]:
    """The patch file, then its line at the end of the series file, then PATCHES.md when configured."""
    from forklift.series.gate import configured_series

    series_file = config.series_dir / SERIES_FILE
    config.series_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(config.series_dir / pick.name, pick.text)
    listed = series_file.read_text(encoding="utf-8") if series_file.is_file() else ""
    write_atomic(series_file, listed + ("" if listed.endswith("\n") or not listed else "\n") + pick.name + "\n")
    written = [config.series_dir / pick.name, series_file]
    if config.patches_md is not None:
        write_atomic(config.patches_md, series_patches_md(configured_series(config)))
        written.append(config.patches_md)
    return written
