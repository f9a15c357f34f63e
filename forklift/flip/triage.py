"""Triage a series on a new upstream release (pure): which patches still apply, which upstream carries.

Every patch is tried in series order over the new pristine tree, as StGit
reports after a rebase: applies exactly, applies at an offset, already
upstream (all of it reverse-applies: retire it), partly upstream (some hunks
reverse-apply, the rest apply), conflicts (the hunks and files that do not
apply), or its file is gone upstream. A patch that still applies but touches a
file upstream changed between the two releases is flagged for a human look:
a clean apply can still be semantically wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from forklift.series.engine import FileProblem, HunkResult, Overlay, Reader, apply_file, apply_patch
from forklift.series.model import Patch, split_header, unrooted
from forklift.series.render import file_diff

Verdict = Literal["applies", "offset", "already-upstream", "partly-upstream", "conflicts", "file-gone"]
VERDICT_OF = {
    "exact": "applies",
    "offset": "offset",
    "already-applied": "already-upstream",
    "partly-applied": "partly-upstream",
    "fuzz": "conflicts",
    "fails": "conflicts",
    "file-missing": "file-gone",
}
BLOCKING = ("conflicts", "file-gone")


@dataclass(frozen=True)
class PatchTriage:
    name: str
    verdict: Verdict
    hunks: tuple[HunkResult, ...]
    problems: tuple[str, ...]  # the hunks and files that keep it from applying
    files: tuple[str, ...]
    upstream_changed: tuple[str, ...]  # touched files upstream changed between the two releases
    refreshed: str | None = None  # the patch re-cut on the new tree (offset or partly upstream), for --write

    @property
    def needs_look(self) -> bool:
        return self.verdict in ("applies", "offset", "partly-upstream") and bool(self.upstream_changed)


def _problems(hunks: tuple[HunkResult, ...], file_problems: tuple[FileProblem, ...]) -> tuple[str, ...]:
    """Why a patch does not apply: its file problems, then each hunk that fails (not those of a gone file)."""
    out = [str(p) for p in file_problems]
    gone = {p.file for p in file_problems if p.problem == "missing"}
    for h in hunks:
        if h.file in gone:
            continue
        if h.status == "fuzz":
            out.append(f"{h.file} hunk #{h.index} (line {h.stated}): needs fuzz {h.fuzz}")
        elif h.status == "fails":
            out.append(f"{h.file} hunk #{h.index} (line {h.stated}): does not apply")
    return tuple(dict.fromkeys(out))


def _land(read: Reader, patch: Patch) -> dict[str, bytes | None]:
    """The new contents from a partly-upstream patch's remaining hunks (the engine lands none of it)."""
    changes: dict[str, bytes | None] = {}

    def current(path: str) -> bytes | None:
        return changes[path] if path in changes else read(path)

    for fp in patch.files:
        changes.update(apply_file(current, fp)[0])
    return changes


def _recut(patch: Patch, before: Reader, changes: dict[str, bytes | None]) -> str:
    """The patch's header with its diff rendered afresh against the new tree (exact line numbers)."""
    header = split_header(patch.text)[0]
    body = "".join(
        file_diff(unrooted(path, patch.root), before(path), changes[path])
        for path in sorted(changes)
        if before(path) != changes[path]
    )
    return header + body


def triage(old: Reader, new: Reader, patches: list[Patch] | tuple[Patch, ...]) -> tuple[list[PatchTriage], Overlay]:
    """Each patch's verdict on the new tree, in series order; returns the new patched overlay too."""
    overlay = Overlay(new)
    verdicts = []
    for patch in patches:
        result = apply_patch(overlay.read, patch)
        verdict: Verdict = VERDICT_OF[result.status]  # type: ignore[assignment]
        changes: dict[str, bytes | None] = {}
        if verdict in ("applies", "offset"):
            changes = dict(result.files)
        elif verdict == "partly-upstream":
            changes = _land(overlay.read, patch)
        refreshed = _recut(patch, overlay.read, changes) if verdict in ("offset", "partly-upstream") else None
        overlay.files.update(changes)
        changed_upstream = tuple(p for p in patch.paths if old(p) != new(p))
        verdicts.append(
            PatchTriage(
                name=patch.name,
                verdict=verdict,
                hunks=result.hunks,
                problems=_problems(result.hunks, result.problems),
                files=patch.paths,
                upstream_changed=changed_upstream,
                refreshed=refreshed,
            )
        )
    return verdicts, overlay
