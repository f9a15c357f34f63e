"""A folder pin read where it lies, for a check: no copy into the cache.

The folder's listing (source.hashing, through its stat memo) has proven it is the pinned one; a check then
reads only the files its patches touch. Each read is held to that listing: the path is resolved against it
(a symbolic link on the way is followed by its target as read now, which must hash to its entry), the file's
bytes are hashed as they are read and must match its entry, execute bit included. A file changed, removed
or replaced since the folder was hashed stops the check with one line naming it, never a verdict on bytes
that are not the pin's; a path the listing does not hold reads as absent, as from a copy. What `read`
returns is what fsio.tree_reader returns over a copy of the listed folder, for every path a patch can name
(series/diff.py refuses a `..` component; here such a path reads as absent).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import NoReturn

from forklift.errors import ForkliftError
from forklift.fsio import Executable, Link, ThroughLink

MAX_HOPS = 40  # symbolic links followed for one path, as Linux follows at most


class PinnedFolder:
    """Reads of `folder` held to `entries`, its listing (path -> ``<type> <sha256>``)."""

    def __init__(self, folder: Path, entries: dict[str, str], memo: Path | None = None) -> None:
        self.folder = folder
        self.entries = entries
        self.memo = memo  # removed when a read disagrees with it: the next run hashes every file again

    def read(self, path: str) -> bytes | None:
        parts = [part for part in path.split("/") if part not in ("", ".")]
        if path.startswith("/") or not parts or ".." in parts:
            return None
        parent = self._folder(parts[:-1])
        entry = None if parent is None else self.entries.get("/".join([*parent, parts[-1]]))
        if parent is None or entry is None:  # outside the folder, or not in the pinned listing
            return None
        rel = "/".join([*parent, parts[-1]])
        if entry[0] == "l":
            return Link(self._link(rel, entry).encode("utf-8", "surrogateescape"))
        content = self._file(rel, entry)
        if parent != parts[:-1]:  # reached through a linked folder (GNU patch follows it, git apply refuses)
            return ThroughLink(content)
        return Executable(content) if entry[0] == "x" else content

    def _folder(self, parts: list[str]) -> list[str] | None:
        """The listed path of the folder `parts` names, each link on the way followed; None when outside."""
        resolved: list[str] = []
        pending = list(parts)
        hops = 0
        while pending:
            part = pending.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if not resolved:
                    return None
                resolved.pop()
                continue
            rel = "/".join([*resolved, part])
            entry = self.entries.get(rel)
            if entry is None or entry[0] != "l":
                resolved.append(part)
                continue
            hops += 1
            target = self._link(rel, entry)
            if hops > MAX_HOPS or target.startswith("/"):
                return None
            pending[:0] = target.split("/")
        return resolved

    def _link(self, rel: str, entry: str) -> str:
        place = self.folder / rel
        try:
            target = os.readlink(place)
        except OSError:
            self._changed(place, entry, "no symbolic link")
        if "l " + hashlib.sha256(os.fsencode(target)).hexdigest() != entry:
            self._changed(place, entry, f"a link to {target!r}")
        return target

    def _file(self, rel: str, entry: str) -> bytes:
        place = self.folder / rel
        try:  # never through a link or into a fifo put there since: those are changes too
            fd = os.open(place, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            self._changed(place, entry, exc.strerror or "nothing readable")
        with os.fdopen(fd, "rb") as handle:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                self._changed(place, entry, "no regular file")
            content = handle.read()
        found = ("x " if mode & stat.S_IXUSR else "f ") + hashlib.sha256(content).hexdigest()
        if found != entry:
            self._changed(place, entry, found)
        return content

    def _changed(self, place: Path, entry: str, found: str) -> NoReturn:
        if self.memo is not None:
            self.memo.unlink(missing_ok=True)
        raise ForkliftError(
            f"{place}: changed since the pinned folder was hashed (listed as {_short(entry)}, found {_short(found)});"
            " run the check again"
        )


def _short(entry: str) -> str:
    """An entry with its sha256 cut to 12 digits, as people compare them."""
    kind, _, digest = entry.partition(" ")
    return f"{kind} {digest[:12]}..." if len(digest) == 64 and kind in ("f", "x", "l") else entry
