"""Source binding: a committed SOURCE file ties a release to the fork commit its series came from.

Like vLLM-Moet's SOURCE file, it names the fork commit and the published
branch. The binding holds only when the commit exists, is reachable from the
published (remote) branch, descends from the pinned upstream base (whose tag
must not have moved), and moved only forward since the previously recorded
commit. Each violation is its own named failure, so CI says which one broke.
`source verify` also replays the series on the pin and compares it with the bound
commit's tree (`not-identical`): the release is the series, and the series is what
the fork commit holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from forklift.config import Config
from forklift.config.toml import tomllib
from forklift.errors import ForkliftError
from forklift.fork.replay import replay_series
from forklift.fork.repo import Git
from forklift.series.gate import configured_series
from forklift.source.materialize import pinned_tree

if TYPE_CHECKING:
    from rich.console import Console

SOURCE_FILE = "SOURCE"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class SourceBinding:
    commit: str
    branch: str  # the published branch as a ref of the fork repository, e.g. origin/release-0.32
    tag: str | None = None  # upstream tag in the fork that must still name the pinned base

    def render(self) -> str:
        lines = [
            "# forklift source binding: the fork commit this series was exported from.",
            "# Written by `forklift source bind`; checked by `forklift source verify`.",
            f'commit = "{self.commit}"',
            f'branch = "{self.branch}"',
        ]
        if self.tag:
            lines.append(f'tag = "{self.tag}"')
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class BindingFailure:
    check: str  # missing-commit, missing-branch, unpublished, moved-tag, not-from-base, went-backwards, not-identical
    message: str

    def __str__(self) -> str:
        return f"{self.check}: {self.message}"


def parse_binding(text: str, where: str) -> SourceBinding:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ForkliftError(f"{where}: invalid TOML: {exc}") from None
    unknown = sorted(set(raw) - {"commit", "branch", "tag"})
    if unknown:
        raise ForkliftError(f"{where}: {unknown[0]}: unknown key")
    for key in ("commit", "branch"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise ForkliftError(f"{where}: {key}: missing (required)")
    if not _COMMIT.match(raw["commit"]):
        raise ForkliftError(f"{where}: commit: expected a full 40-hex commit id, got {raw['commit']!r}")
    return SourceBinding(commit=raw["commit"], branch=raw["branch"], tag=raw.get("tag") or None)


def load_binding(path: Path) -> SourceBinding:
    try:
        return parse_binding(path.read_text(encoding="utf-8"), str(path))
    except FileNotFoundError:
        raise ForkliftError(f"{path}: no source binding (run `forklift source bind COMMIT --branch REF`)") from None


def previous_commit(path: Path, current: str) -> str | None:
    """The fork commit recorded before `current`, from the distribution repository's history of SOURCE."""
    dist = Git(path.parent)
    if dist.run("rev-parse", "--git-dir", check=False).returncode != 0:
        return None  # the distribution is not under git: there is no earlier record to compare with
    for revision in dist.text("log", "--format=%H", "--", path.name).split():
        shown = dist.run("show", f"{revision}:./{path.name}", check=False)
        if shown.returncode != 0:
            continue
        try:
            recorded = parse_binding(shown.stdout.decode(), f"{path} at {revision[:12]}").commit
        except ForkliftError:
            continue  # an old malformed record proves nothing about direction
        if recorded != current:
            return recorded
    return None


def verify_binding(fork: Git, binding: SourceBinding, base: str, previous: str | None) -> list[BindingFailure]:
    """Every way the binding can be broken, each named; an empty list means it holds."""
    fork.ensure_repo()
    failures = []
    commit = fork.resolve(binding.commit)
    if commit is None:
        failures.append(
            BindingFailure("missing-commit", f"fork commit {binding.commit[:12]} does not exist in {fork.repo}")
        )
    published = fork.resolve(binding.branch)
    if published is None:
        failures.append(
            BindingFailure(
                "missing-branch", f"published branch {binding.branch!r} does not exist in {fork.repo} (fetch it first)"
            )
        )
    elif commit and not fork.is_ancestor(commit, published):
        failures.append(
            BindingFailure(
                "unpublished",
                f"fork commit {commit[:12]} is not reachable from the published "
                f"branch {binding.branch} ({published[:12]})",
            )
        )
    if binding.tag:
        tagged = fork.resolve(f"refs/tags/{binding.tag}")
        if tagged != base:
            now = tagged[:12] if tagged else "nothing"
            failures.append(
                BindingFailure("moved-tag", f"tag {binding.tag} now names {now}, but the pinned base is {base[:12]}")
            )
    base_commit = fork.resolve(base)
    if commit and (base_commit is None or not fork.is_ancestor(base_commit, commit)):
        failures.append(
            BindingFailure(
                "not-from-base", f"fork commit {commit[:12]} does not descend from the pinned base {base[:12]}"
            )
        )
    if commit and previous and previous != commit:
        known = fork.resolve(previous) is not None
        # a previous record on another base is another release's (the fork moved): direction says nothing then
        other_release = known and base_commit is not None and not fork.is_ancestor(base_commit, previous)
        if not other_release and (not known or not fork.is_ancestor(previous, commit)):
            failures.append(
                BindingFailure(
                    "went-backwards",
                    f"fork commit {commit[:12]} does not descend from the previously recorded {previous[:12]}",
                )
            )
    return failures


def check_binding(
    config: Config, fork: Git, binding: SourceBinding, base: str, previous: str | None, progress: Console | None = None
) -> list[BindingFailure]:
    """Every check of a binding, the series' identity with the commit's tree included (bind and verify alike)."""
    failures = verify_binding(fork, binding, base, previous)
    if not any(failure.check == "not-from-base" for failure in failures):  # another history: no tree to compare
        failures += filter(None, [series_identity(config, fork, binding.commit, base, progress)])
    return failures


def series_identity(
    config: Config, fork: Git, commit: str, base: str, progress: Console | None = None
) -> BindingFailure | None:
    """The series applied to the pinned tree against the bound commit's tree: a failure naming the first
    differing file, or None when the two are the same over upstream's paths."""
    if fork.resolve(commit) is None:
        return None  # missing-commit says so already
    series = configured_series(config, empty=True)
    tree = pinned_tree(config, progress=progress)
    result = replay_series(fork, commit, tree.path, series.patches, series.applier, base)
    if result.identical:
        return None
    return BindingFailure(
        "not-identical",
        f"the series applied to {tree.label} differs from fork commit {commit[:12]} in "
        f"{len(result.differences)} file(s), first {result.differences[0]} (export the commit, or bind the one "
        "the series came from)",
    )
