"""Unpack an archive into a fresh folder so that nothing can land outside it, whatever the archive holds.

Python's tarfile is not trusted to do this: the "data" filter of the 3.11.7 in use is fooled by the
CVE-2025-4517 technique (a path longer than PATH_MAX stops os.path.realpath, then a symlink and a
hardlink through it write outside). So forklift writes every member itself:

- each path is checked as written (no absolute path, no ``..``, no name over NAME_MAX/PATH_MAX, no
  device, fifo or other special file) before the first byte of the archive is written;
- every folder on the way is opened relative to its parent's descriptor with ``O_NOFOLLOW``, so a
  write never passes through a symlink (not even one inside the tree), and files are created with
  ``O_EXCL | O_NOFOLLOW``;
- a hardlink may only name a regular file this extraction already wrote;
- every symlink left in the tree is resolved component by component on disk (never with realpath),
  and one that leads outside fails the whole extraction;
- limits on total bytes, member count, compression ratio, header sizes and depth stop a bomb while it is
  being read (forklift.source.limits; tar headers are read by forklift.source.tarstream, not tarfile).

An sdist's single top folder (``vllm-0.32.0/``) is stripped so paths read as in the upstream
repository (``vllm/envs.py``), which is what patches name (``a/vllm/envs.py``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
import struct
import zipfile
from pathlib import Path
from typing import Protocol

from forklift.errors import ForkliftError
from forklift.source.limits import (
    MAX_SYMLINK_HOPS,
    PATH_MAX,
    Limits,
    UnsafeMember,
    clean_member,
)
from forklift.source.tarstream import Member, TarStream

COPY_CHUNK = 1 << 20
_ZIP_END = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP_TAIL = 22 + 0xFFFF  # the end record and the longest comment


class Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


def extract_archive(
    archive: Path, dest: Path, *, strip_top: bool, name: str | None = None, limits: Limits | None = None
) -> None:
    """Extract a tar (any compression) or zip `archive` into `dest` (created; must not exist)."""
    label = f"archive {name or archive.name}"
    limits = limits or Limits.from_env()
    with open(archive, "rb") as handle:
        is_zip = handle.read(4) == b"PK\x03\x04"
    packed = max(archive.stat().st_size, 1)
    dest.mkdir(parents=True)
    writer = TreeWriter(dest, label, limits)
    try:
        if is_zip:
            _extract_zip(archive, writer, strip_top, packed)
        else:
            _extract_tar(archive, writer, strip_top, packed)
        writer.check_links()
    finally:
        writer.close()


def _extract_tar(archive: Path, writer: TreeWriter, strip_top: bool, packed: int) -> None:
    """Two passes: every header is read and checked before the first byte is written, then the data."""
    label = writer.label
    with open(archive, "rb") as handle:
        members = list(TarStream(handle, label, writer.limits, packed))
    paths = [clean_member(m.name, label) for m in members]
    top = _single_top(paths) if strip_top else None
    plan: dict[int, tuple[str, str]] = {}
    for index, (member, path) in enumerate(zip(members, paths, strict=True)):
        rel = _strip(path, top)
        if not rel:
            continue
        if member.kind == "special":
            raise UnsafeMember(f"unsafe {label}: member {member.name!r} is a device, fifo or other special file")
        if member.kind == "symlink":
            _check_symlink(rel, member.linkname, member.name, label)
        link = ""
        if member.kind == "hardlink":
            link = _strip(clean_member(member.linkname, label, member.name), top)
            if not link:
                raise UnsafeMember(f"unsafe {label}: member {member.name!r} links outside the tree")
        plan[index] = (rel, link)
    with open(archive, "rb") as handle:
        stream = TarStream(handle, label, writer.limits, packed)
        for index, member in enumerate(stream):
            if index in plan:
                _write(writer, member, *plan[index], stream)


def _write(writer: TreeWriter, member: Member, rel: str, link: str, data: Readable) -> None:
    if member.kind == "folder":
        writer.folder(rel, member.name)
    elif member.kind == "symlink":
        writer.symlink(rel, member.linkname, member.name)
    elif member.kind == "hardlink":
        writer.hardlink(rel, link, member.name)
    else:
        writer.file(rel, data, member.name, executable=bool(member.mode & stat.S_IXUSR))


def _extract_zip(archive: Path, writer: TreeWriter, strip_top: bool, packed: int) -> None:
    label, limits = writer.label, writer.limits
    limits.check_members(zip_entries(archive, label), label)  # before zipfile reads the whole directory
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            declared = 0
            for info in infos:
                declared += info.file_size
                limits.check_bytes(declared, label, info.filename)
                limits.check_ratio(declared, packed, label, info.filename)
            paths = [clean_member(info.filename, label) for info in infos]
            top = _single_top(paths) if strip_top else None
            plan = []
            for info, path in zip(infos, paths, strict=True):
                mode = info.external_attr >> 16
                if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
                    raise UnsafeMember(f"unsafe {label}: member {info.filename!r} is not a file or folder")
                if rel := _strip(path, top):
                    plan.append((info, rel, mode))
            for info, rel, mode in plan:
                if info.is_dir():
                    writer.folder(rel, info.filename)
                    continue
                with zf.open(info) as source:
                    writer.file(rel, source, info.filename, executable=bool(mode & stat.S_IXUSR))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ForkliftError(f"cannot extract {label}: {' '.join(str(exc).split())}") from None


def zip_entries(archive: Path, label: str) -> int:
    """How many members a zip's end record declares (ZIP64's when present), read without zipfile, which
    builds an object for every member the directory holds before anything can count them."""
    with open(archive, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(size - _ZIP_TAIL, 0))
        tail = handle.read(_ZIP_TAIL)
        end = tail.rfind(_ZIP_END)
        if end < 0 or len(tail) - end < 22:
            raise ForkliftError(f"cannot extract {label}: no zip end record (not a zip, or truncated)")
        count: int = struct.unpack_from("<H", tail, end + 10)[0]
        locator = end - 20
        if locator >= 0 and tail[locator : locator + 4] == _ZIP64_LOCATOR:
            (offset,) = struct.unpack_from("<Q", tail, locator + 8)
            handle.seek(min(offset, size))
            record = handle.read(56)
            if len(record) == 56 and record[:4] == b"PK\x06\x06":
                (count,) = struct.unpack_from("<Q", record, 32)
    return count


class TreeWriter:
    """Writes members under `dest` through directory descriptors, never following a symlink."""

    def __init__(self, dest: Path, label: str, limits: Limits) -> None:
        self.dest, self.label, self.limits = dest, label, limits
        self.root = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        self.files: set[str] = set()  # regular files written here: the only valid hardlink targets
        self.links: list[tuple[str, str]] = []  # (path, member) of every symlink, checked at the end
        self.written = 0

    def close(self) -> None:
        os.close(self.root)

    def check_bytes(self, total: int, member: str) -> None:
        self.limits.check_bytes(total, self.label, member)

    def folder(self, rel: str, member: str) -> None:
        os.close(self._parent(f"{rel}/.", member))

    def file(self, rel: str, source: Readable, member: str, *, executable: bool) -> None:
        parent = self._parent(rel, member)
        leaf = posixpath.basename(rel)
        try:
            self._replace_regular(parent, leaf, rel, member)
            mode = 0o755 if executable else 0o644
            fd = os.open(leaf, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=parent)
            with os.fdopen(fd, "wb") as out:
                os.fchmod(fd, mode)  # exactly 644/755, whatever the umask or the archive says
                while chunk := source.read(COPY_CHUNK):
                    self.written += len(chunk)
                    self.check_bytes(self.written, member)
                    out.write(chunk)
            self.files.add(rel)
        finally:
            os.close(parent)

    def symlink(self, rel: str, target: str, member: str) -> None:
        parent = self._parent(rel, member)
        try:
            self._refuse_existing(parent, posixpath.basename(rel), member)
            os.symlink(target, posixpath.basename(rel), dir_fd=parent)
            self.files.discard(rel)
            self.links.append((rel, member))
        finally:
            os.close(parent)

    def hardlink(self, rel: str, target: str, member: str) -> None:
        if target not in self.files:
            raise UnsafeMember(
                f"unsafe {self.label}: member {member!r} is a hardlink to {target!r},"
                " which is not a regular file extracted before it"
            )
        source_parent = self._parent(target, member)
        parent = self._parent(rel, member)
        try:
            found = os.stat(posixpath.basename(target), dir_fd=source_parent, follow_symlinks=False)
            if not stat.S_ISREG(found.st_mode):
                raise UnsafeMember(f"unsafe {self.label}: member {member!r} is a hardlink to a non-file {target!r}")
            self._replace_regular(parent, posixpath.basename(rel), rel, member)
            os.link(
                posixpath.basename(target),
                posixpath.basename(rel),
                src_dir_fd=source_parent,
                dst_dir_fd=parent,
                follow_symlinks=False,
            )
            self.files.add(rel)
        finally:
            os.close(parent)
            os.close(source_parent)

    def check_links(self) -> None:
        """Every symlink, followed on disk through any other link, must end inside the tree."""
        for rel, member in self.links:
            target = os.readlink(rel, dir_fd=self.root)
            _check_symlink(rel, target, member, self.label)
            if not resolves_inside(self.dest, rel):
                raise UnsafeMember(
                    f"unsafe {self.label}: member {member!r} is a symlink escaping the tree through other links"
                    f" ({target!r})"
                )

    def _parent(self, rel: str, member: str) -> int:
        """A descriptor of `rel`'s folder, made as needed; each step refuses to pass through a symlink."""
        fd = os.dup(self.root)
        walked = []
        try:
            for part in rel.split("/")[:-1]:
                walked.append(part)
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                try:
                    child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise UnsafeMember(
                            f"unsafe {self.label}: member {member!r} is written through {'/'.join(walked)!r},"
                            " which is a symlink or a file, not a folder"
                        ) from None
                    raise
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _replace_regular(self, parent: int, leaf: str, rel: str, member: str) -> None:
        """A later member of the same name replaces an earlier regular file (tar's rule); nothing else."""
        try:
            found = os.stat(leaf, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(found.st_mode):
            raise UnsafeMember(f"unsafe {self.label}: member {member!r} would replace a folder or link {rel!r}")
        os.unlink(leaf, dir_fd=parent)

    def _refuse_existing(self, parent: int, leaf: str, member: str) -> None:
        try:
            os.stat(leaf, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        raise UnsafeMember(f"unsafe {self.label}: member {member!r} would replace an entry already extracted")


def resolves_inside(root: Path, rel: str) -> bool:
    """Whether `rel` under `root`, with every symlink on the way followed as it is on disk, stays inside.

    Walks one component at a time with lstat/readlink (os.path.realpath gives up silently on paths past
    PATH_MAX, which is how CVE-2025-4517 fools tarfile). A missing component ends the walk lexically;
    a loop or any other error counts as outside.
    """
    pending = [p for p in rel.split("/") if p]
    resolved: list[str] = []
    hops = 0
    exists = True
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                return False
            resolved.pop()
            continue
        resolved.append(part)
        if not exists:
            continue
        path = os.path.join(root, *resolved)
        if len(os.fsencode(path)) >= PATH_MAX:
            return False
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            exists = False
            continue
        except OSError:
            return False
        if stat.S_ISLNK(mode):
            hops += 1
            target = os.readlink(path)
            if hops > MAX_SYMLINK_HOPS or target.startswith("/"):
                return False
            resolved.pop()
            pending[:0] = target.split("/")
    return True


def refuse_escaping_links(tree: Path, label: str) -> None:
    """Fail when a symlink anywhere in `tree` leads outside it (for trees not made by extraction)."""
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                refuse_escaping_link(tree, os.path.relpath(path, tree).replace(os.sep, "/"), label)


def refuse_escaping_link(tree: Path, rel: str, label: str) -> None:
    """Fail when the symlink `rel` of `tree` leads outside it, as written or through other links."""
    _check_symlink(rel, os.readlink(tree / rel), rel, label)
    if not resolves_inside(tree, rel):
        raise UnsafeMember(f"unsafe {label}: {rel!r} is a symlink escaping the tree through other links")


def _single_top(paths: list[str]) -> str | None:
    """The one folder every member lives in, if there is exactly one."""
    tops = {p.split("/", 1)[0] for p in paths if p}
    if len(tops) == 1 and any("/" in p for p in paths):
        return tops.pop()
    return None


def _strip(path: str, top: str | None) -> str:
    if top is None:
        return path
    return path[len(top) + 1 :] if path.startswith(top + "/") else ""


def _check_symlink(rel: str, target: str, member: str, label: str) -> None:
    """The link as written: no absolute target, none that climbs out lexically."""
    if target.startswith("/"):
        raise UnsafeMember(f"unsafe {label}: member {member!r} is a symlink to the absolute path {target!r}")
    if "\0" in target or len(os.fsencode(target)) >= PATH_MAX // 2:
        raise UnsafeMember(f"unsafe {label}: member {member!r} is a symlink with an over-long or NUL target")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    if resolved == ".." or resolved.startswith("../"):
        raise UnsafeMember(f"unsafe {label}: member {member!r} is a symlink escaping the tree ({target!r})")
