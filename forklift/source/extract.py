"""Unpack an archive into a fresh folder, refusing any member that could land outside it.

Every member is checked before the first byte is written: no absolute path, no ``..``, no
device or fifo, no symlink or hardlink pointing outside the tree. Tar members then go through
tarfile's own "data" filter as a second guard (it also resolves links already on disk).
An sdist's single top folder (``vllm-0.32.0/``) is stripped so paths read as in the upstream
repository (``vllm/envs.py``), which is what patches name (``a/vllm/envs.py``).
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path
from typing import Any

from forklift.errors import ForkliftError


class UnsafeMember(ForkliftError):
    pass


def extract_archive(archive: Path, dest: Path, *, strip_top: bool, name: str | None = None) -> None:
    """Extract a tar (any compression) or zip `archive` into `dest` (created; must not exist)."""
    label = f"archive {name or archive.name}"
    with open(archive, "rb") as handle:
        is_zip = handle.read(4) == b"PK\x03\x04"
    dest.mkdir(parents=True)
    if is_zip:
        _extract_zip(archive, dest, strip_top, label)
    else:
        _extract_tar(archive, dest, strip_top, label)


def _extract_tar(archive: Path, dest: Path, strip_top: bool, label: str) -> None:
    if not hasattr(tarfile, "data_filter"):  # added in the 3.10.12 / 3.11.4 security releases
        raise ForkliftError(f"cannot extract {label} safely: this Python's tarfile has no data filter (update Python)")
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = tar.getmembers()
            paths = [_clean(m.name, label) for m in members]
            top = _single_top(paths) if strip_top else None
            plan = []
            for member, path in zip(members, paths, strict=True):
                rel = _strip(path, top)
                if not rel:
                    continue
                _check_type(member, rel, label)
                changes: dict[str, Any] = {"name": rel}
                if member.issym():
                    _check_symlink(rel, member.linkname, member.name, label)
                elif member.islnk():
                    changes["linkname"] = _strip(_clean(member.linkname, label, member.name), top) or ""
                    if not changes["linkname"]:
                        raise UnsafeMember(f"unsafe {label}: member {member.name!r} links outside the tree")
                plan.append(member.replace(**changes, deep=False))
            tar.extractall(dest, members=plan, filter=_data_filter(label))
    except (tarfile.TarError, EOFError, OSError, KeyError) as exc:
        raise ForkliftError(f"cannot extract {label}: {' '.join(str(exc).split())}") from None


def _data_filter(label: str):
    def check(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo:
        try:
            return tarfile.data_filter(member, path)
        except tarfile.FilterError as exc:
            raise UnsafeMember(f"unsafe {label}: member {member.name!r}: {exc}") from None

    return check


def _extract_zip(archive: Path, dest: Path, strip_top: bool, label: str) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            paths = [_clean(info.filename, label) for info in infos]
            top = _single_top(paths) if strip_top else None
            for info, path in zip(infos, paths, strict=True):
                rel = _strip(path, top)
                mode = info.external_attr >> 16
                if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
                    raise UnsafeMember(f"unsafe {label}: member {info.filename!r} is not a file or folder")
                if not rel:
                    continue
                target = dest / rel
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
                if mode & stat.S_IXUSR:
                    target.chmod(0o755)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ForkliftError(f"cannot extract {label}: {' '.join(str(exc).split())}") from None


def refuse_escaping_links(tree: Path, label: str) -> None:
    """Fail when a symlink anywhere in `tree` points outside it (for trees not made by extraction)."""
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                rel = os.path.relpath(path, tree).replace(os.sep, "/")
                _check_symlink(rel, os.readlink(path), rel, label)


def _clean(name: str, label: str, member: str | None = None) -> str:
    """`name` as a relative POSIX path without ``.`` parts; absolute or ``..`` paths are refused."""
    member = member or name
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise UnsafeMember(f"unsafe {label}: member {member!r} has an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeMember(f"unsafe {label}: member {member!r} climbs out with '..'")
    return "/".join(parts)


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


def _check_type(member: tarfile.TarInfo, rel: str, label: str) -> None:
    if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
        raise UnsafeMember(f"unsafe {label}: member {member.name!r} is a device, fifo or other special file")


def _check_symlink(rel: str, target: str, member: str, label: str) -> None:
    if target.startswith("/"):
        raise UnsafeMember(f"unsafe {label}: member {member!r} is a symlink to the absolute path {target!r}")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    if resolved == ".." or resolved.startswith("../"):
        raise UnsafeMember(f"unsafe {label}: member {member!r} is a symlink escaping the tree ({target!r})")
