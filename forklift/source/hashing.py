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

A folder pin is hashed on every run (a local folder can change under us). As git's index does, a
*stat memo* may remember each file's entry by (size, mtime, inode, mode, ctime): a file whose stat is
unchanged is not read again (ctime too, which no utime() can set back, so a rewrite that restores the
mtime still counts). Entries modified too close to the memo's own time are never remembered ("racily
clean" in git's words: a write in the same clock tick would not change the stat), so they are re-read.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from forklift.errors import ForkliftError
from forklift.fsio import write_atomic

SKIPPED_NAMES = frozenset({".git"})
RACY_NS = 2_000_000_000  # files changed this close to the memo's time are re-read next time (coarse mtimes)
StatKey = tuple[int, int, int, int, int]  # size, mtime_ns, inode, mode, ctime_ns
MEMO_FORMAT = 2  # of a stat memo; a memo of another format is no memo (every file is read)


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


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a file's bytes, read with plain os.read calls: a folder pin's first hash opens every one of
    its files, and a buffered file object costs more than the hashing (glibc's 19,530 files: 0.5 s vs 0.3 s)."""
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY)
    try:
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def directory_entries(folder: Path, memo: Path | None = None, copy_to: Path | None = None) -> dict[str, str]:
    """Each listed path of `folder` and its entry (``<type> <sha256>``, as in this module's docstring);
    `memo`, a stat memo file (read and rewritten).

    With `copy_to`, the folder is also copied there (folders, files with their mode and times, links
    as links) in the same pass: the entries are of the bytes as they were copied, each file read once."""
    known = _read_memo(memo) if memo and copy_to is None else {}
    remembered: dict[str, list[object]] = {}
    started = time.time_ns()
    entries: dict[str, str] = {}
    folders: list[tuple[str, os.stat_result]] = []
    if copy_to is not None:
        os.mkdir(copy_to)
        folders.append((str(copy_to), os.stat(folder)))
    for rel, entry in _entries(str(folder)):
        if "\n" in rel:
            raise ForkliftError(f"{os.path.join(folder, rel)!r}: a file name with a newline cannot be pinned")
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            if copy_to is not None:
                os.mkdir(copy_to / rel)
                folders.append((str(copy_to / rel), st))
            continue
        key: StatKey = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode, st.st_ctime_ns)
        hit = known.get(rel)
        if copy_to is not None:
            line = _copied_entry(Path(entry.path), st, copy_to / rel)
        else:
            line = hit[1] if hit and hit[0] == key else _entry(entry.path, st.st_mode)  # a str: a Path per file costs
        if st.st_mtime_ns < started - RACY_NS:
            remembered[rel] = [*key, line]
        entries[rel] = line
    for path, st in reversed(folders):  # after their contents, as shutil.copytree does
        os.chmod(path, stat.S_IMODE(st.st_mode))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    if memo and remembered != {rel: [*k, e] for rel, (k, e) in known.items()}:
        write_atomic(memo, json.dumps({"format": MEMO_FORMAT, "entries": remembered}, separators=(",", ":")))
    return entries


def listing_text(entries: dict[str, str]) -> str:
    """The canonical listing of `entries` (directory_entries): one line each, sorted by the path's UTF-8 bytes."""
    return "".join(f"{entries[rel]} {rel}\n" for rel in sorted(entries, key=str.encode))


def listing_digest(entries: dict[str, str]) -> str:
    return hashlib.sha256(listing_text(entries).encode()).hexdigest()


def directory_listing(folder: Path, memo: Path | None = None, copy_to: Path | None = None) -> str:
    """The canonical listing defined in this module's docstring (directory_entries says what `memo` and
    `copy_to` do)."""
    return listing_text(directory_entries(folder, memo, copy_to))


def _entries(folder: str) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(path relative to `folder` with `/`, entry) for every folder, file and symlink below it, as
    os.walk finds them (a folder that cannot be read is passed over), a folder before what it holds,
    without descending into links or SKIPPED_NAMES. One scandir per folder and no relpath per file:
    the walk is most of a warm pin's cost. A tree nested deeper than Python's recursion limit is
    refused, as copying it with shutil would be."""
    stack = [(folder, "", 0)]
    while stack:
        path, prefix, depth = stack.pop()
        if depth > sys.getrecursionlimit():
            raise ForkliftError(
                f"{folder}: folders nested deeper than {sys.getrecursionlimit()} levels; such a tree cannot be pinned"
            )
        try:
            with os.scandir(path) as found:
                entries = list(found)
        except OSError:
            continue
        for entry in entries:
            if entry.name in SKIPPED_NAMES:
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, f"{prefix}{entry.name}/", depth + 1))
            yield prefix + entry.name, entry


def directory_digest(folder: Path, memo: Path | None = None, copy_to: Path | None = None) -> str:
    return listing_digest(directory_entries(folder, memo, copy_to))


def _read_memo(memo: Path) -> dict[str, tuple[StatKey, str]]:
    """The memo's entries; an unreadable, malformed or other-format memo is no memo (every file is read)."""
    try:
        raw = json.loads(memo.read_bytes())
        if raw["format"] != MEMO_FORMAT:
            return {}
        return {
            rel: ((int(v[0]), int(v[1]), int(v[2]), int(v[3]), int(v[4])), str(v[5]))
            for rel, v in raw["entries"].items()
        }
    except (OSError, ValueError, TypeError, IndexError, AttributeError, KeyError):
        return {}


def _copied_entry(path: Path, st: os.stat_result, dest: Path) -> str:
    """`path` copied to `dest` (a link as a link; a file's bytes, mode and times), and its listing entry."""
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(path)
        os.symlink(target, dest)
        return "l " + hashlib.sha256(os.fsencode(target)).hexdigest()
    if not stat.S_ISREG(st.st_mode):
        raise ForkliftError(f"{path}: not a regular file, directory or symlink; cannot be pinned")
    digest = hashlib.sha256()
    with open(path, "rb") as source, open(dest, "xb") as out:
        while chunk := source.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    os.chmod(dest, stat.S_IMODE(st.st_mode))
    os.utime(dest, ns=(st.st_atime_ns, st.st_mtime_ns))
    return ("x " if st.st_mode & stat.S_IXUSR else "f ") + digest.hexdigest()


def _entry(path: str, mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "l " + hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
    if stat.S_ISREG(mode):
        return ("x " if mode & stat.S_IXUSR else "f ") + file_sha256(path)
    raise ForkliftError(f"{path}: not a regular file, directory or symlink; cannot be pinned")
