"""Which upstream commit carries a retired patch: `git patch-id --stable` over the commits between the two pins.

Each side is taken twice, so that the diff writer does not decide the match: a commit as git renders it (against
the patch file as written, which `git format-patch` may have made) and as forklift renders it (against the patch's
change to the old release, rendered the same way; `pick` and `export` write that form). Each commit's diff is
limited to the patch's files, so a commit that also touched others still carries it.
"""

from __future__ import annotations

from forklift.fork.repo import Git
from forklift.series.model import Patch, split_header, unrooted
from forklift.series.render import file_diff

Changes = dict[str, tuple[bytes | None, bytes | None]]  # tree path -> (before, after)


def patch_ids(git: Git, text: str) -> dict[str, str]:
    """patch id -> commit for each `commit SHA` section of `text` (0000... for a bare diff)."""
    out = git.text("patch-id", "--stable", input=text.encode("utf-8", "surrogateescape"))
    pairs = (line.split() for line in out.splitlines())
    return {pair[0]: pair[1] for pair in pairs if len(pair) == 2}


def rendered(changes: Changes, root: str) -> str:
    """The changes as forklift's diff writer renders them, paths below the patch root."""
    return "".join(
        file_diff(unrooted(path, root), *changes[path]) for path in sorted(changes) if len(set(changes[path])) > 1
    )


def carrier(git: Git, old: str, new: str, patch: Patch, change: Changes) -> str | None:
    """The commit in old..new whose change to the patch's files is the patch's (`change`: on the old release)."""
    wanted = set(patch_ids(git, rendered(change, patch.root)))
    wanted |= set(patch_ids(git, split_header(patch.text)[1]))  # git reads only its own `diff --git` form
    paths = list(patch.paths)
    relative = [f"--relative={patch.root}"] if patch.root else []
    log = git.text("log", "-p", "--no-renames", "--format=commit %H", *relative, f"{old}..{new}", "--", *paths)
    found = patch_ids(git, log)
    for commit in git.text("rev-list", "--reverse", f"{old}..{new}", "--", *paths).split():
        blobs = git.blobs([f"{rev}:{path}" for path in paths for rev in (f"{commit}^", commit)])
        body = rendered({path: (blobs[2 * i], blobs[2 * i + 1]) for i, path in enumerate(paths)}, patch.root)
        if body:
            found.update(patch_ids(git, f"commit {commit}\n{body}"))
    return next((found[pid] for pid in sorted(wanted) if pid in found), None)
