"""sha256 of a file, and of a directory through a canonical listing.

The directory digest lets a local folder be pinned like an artifact. Its definition:

    Walk the folder without following symlinks, skipping every entry named ``.git`` (a checkout's
    git metadata changes on every ``git status``). For each file write one line

        <type> <sha256> <path>\\n

    where <path> is the path relative to the folder with ``/`` separators, and <type> is
    ``x`` for a regular file with the owner's execute bit, ``f`` for any other regular file
    (<sha256> of its bytes), or ``l`` for a symlink (<sha256> of its target text).
    Directories are not listed (an empty folder does not count, as in git). Lines are sorted
    by the UTF-8 bytes of <path>; the digest is the sha256 of the concatenated UTF-8 lines.
    A fifo, socket or device file, or a name holding a newline, is refused.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from forklift.errors import ForkliftError

SKIPPED_NAMES = frozenset({".git"})


def pinnable_kind(path: Path) -> str:
    """ "dir" or "file" for what a path pin may name; a device, fifo or socket is refused with one line
    (hashing /dev/zero or waiting on a fifo would never end)."""
    mode = path.stat().st_mode
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    kinds = {stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device", stat.S_ISFIFO: "a fifo"}
    what = next((name for test, name in kinds.items() if test(mode)), "a socket or other special file")
    raise ForkliftError(f"{path}: is {what}, not a file or folder; only those can be pinned")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def directory_listing(folder: Path) -> str:
    """The canonical listing defined in this module's docstring."""
    lines = []
    for dirpath, dirnames, filenames in os.walk(folder):
        # os.walk puts symlinks to folders among dirnames; they are entries, never descended into.
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        dirnames[:] = [d for d in dirnames if d not in SKIPPED_NAMES and d not in links]
        for name in [*filenames, *links]:
            if name in SKIPPED_NAMES:
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, folder).replace(os.sep, "/")
            if "\n" in rel:
                raise ForkliftError(f"{path!r}: a file name with a newline cannot be pinned")
            lines.append((rel.encode(), f"{_entry(Path(path))} {rel}\n"))
    lines.sort()
    return "".join(line for _, line in lines)


def directory_digest(folder: Path) -> str:
    return hashlib.sha256(directory_listing(folder).encode()).hexdigest()


def _entry(path: Path) -> str:
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        return "l " + hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
    if stat.S_ISREG(mode):
        return ("x " if mode & stat.S_IXUSR else "f ") + file_sha256(path)
    raise ForkliftError(f"{path}: not a regular file, directory or symlink; cannot be pinned")
