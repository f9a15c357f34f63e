"""Deterministic renderings of a series: the normalized combined diff (and its hash) and PATCHES.md.

The overlay hash binds a release to exactly this content: sha256 of the
combined diff from the pristine tree to the patched tree, rendered with no
index lines, no dates and files in sorted order, so the same content always
gives the same hash however the series is cut into patches.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Hashable, Sequence
from typing import Protocol

from forklift.mdtable import table
from forklift.series.engine import split_lines
from forklift.series.model import Patch

CONTEXT = 3


def _text_lines(content: bytes | None) -> list[str]:
    """Lines split on \\n only, as the engine splits them (str.splitlines also splits on \\f, \\r...)."""
    if content is None:
        return []
    return [line.decode("utf-8", "surrogateescape") for line in split_lines(content)]


def line_opcodes(old: Sequence[Hashable], new: Sequence[Hashable]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes for old -> new, matching only the part between the common head and tail:
    whole-file matching is slow, and a patched file differs from upstream in a few places."""
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    inner = difflib.SequenceMatcher(None, old[head : len(old) - tail], new[head : len(new) - tail], autojunk=False)
    codes = [("equal", 0, head, 0, head)] if head else []
    codes += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in inner.get_opcodes()]
    if tail:
        codes.append(("equal", len(old) - tail, len(old), len(new) - tail, len(new)))
    return codes


def _range(start: int, length: int) -> str:
    """A hunk header range as diff writes it (1-based; an empty range names the line before it)."""
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


def _hunks(old: list[str], new: list[str]) -> list[str]:
    matcher = difflib.SequenceMatcher()  # empty: get_grouped_opcodes() only reads the opcodes set here
    matcher.opcodes = line_opcodes(old, new)  # type: ignore[attr-defined]  # the cache get_opcodes() fills
    out = []
    for group in matcher.get_grouped_opcodes(CONTEXT):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2 - i1)} +{_range(j1, j2 - j1)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [" " + line for line in old[a1:a2]]
                continue
            out += ["-" + line for line in old[a1:a2]]
            out += ["+" + line for line in new[b1:b2]]
    return out


def file_diff(path: str, before: bytes | None, after: bytes | None) -> str:
    """One file's unified diff in git's layout, minus index lines and dates."""
    old, new = _text_lines(before), _text_lines(after)
    head = [f"diff --git a/{path} b/{path}\n"]
    if before is None:
        head.append("new file mode 100644\n")
    elif after is None:
        head.append("deleted file mode 100644\n")
    head.append("--- /dev/null\n" if before is None else f"--- a/{path}\n")
    head.append("+++ /dev/null\n" if after is None else f"+++ b/{path}\n")
    out = []
    for line in _hunks(old, new):
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n\\ No newline at end of file\n")
    return "".join(head + out)


class DiffMemo(Protocol):
    """Diffs already rendered, by a key of what they depend on (a dict, or a folder in the cache)."""

    def get(self, key: str) -> str | None: ...

    def __setitem__(self, key: str, text: str) -> None: ...


def _diff_key(path: str, before: bytes | None, after: bytes | None) -> str:
    digest = hashlib.sha256(f"file_diff 1\0{path}\0".encode("utf-8", "surrogateescape"))
    for side in (before, after):
        digest.update(b"-" if side is None else hashlib.sha256(side).digest())
    return digest.hexdigest()


def combined_diff(changed: dict[str, tuple[bytes | None, bytes | None]], memo: DiffMemo | None = None) -> str:
    """Every changed file's diff in path order; `memo` keeps them (difflib on big files is slow)."""
    parts = []
    for path in sorted(changed):
        key = _diff_key(path, *changed[path]) if memo is not None else ""
        text = memo.get(key) if memo is not None else None
        if text is None:
            text = file_diff(path, *changed[path])
            if memo is not None:
                memo[key] = text
        parts.append(text)
    return "".join(parts)


def overlay_hash(changed: dict[str, tuple[bytes | None, bytes | None]], memo: DiffMemo | None = None) -> str:
    text = combined_diff(changed, memo)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def patches_md(patches: list[Patch], retired: list[str] | None = None) -> str:
    """PATCHES.md: one row per patch, generated from the headers; check keeps it in sync."""
    lines = [
        "# Patches",
        "",
        "Generated by `forklift patches-md` from the patch headers; `forklift check` fails when it drifts.",
        "",
    ]
    rows = []
    for number, patch in enumerate(patches, 1):
        h = patch.header
        added = sum(f.added for f in patch.files)
        removed = sum(f.removed for f in patch.files)
        files = ", ".join(f"`{p}`" for p in patch.paths)
        rows.append(
            [
                number,
                f"`{patch.name}`",
                h.get("kind"),
                h.description,
                h.get("origin"),
                h.get("forwarded"),
                files,
                f"+{added} -{removed}",
            ]
        )
    lines += table(["#", "patch", "kind", "description", "origin", "forwarded", "files", "+/-"], rows, empty="-")
    if retired:
        lines += ["", "## Retired", "", *(f"- {entry}" for entry in retired)]
    return "\n".join(lines) + "\n"
