"""The patch series: a quilt `series` file, the patch files it names, and each patch parsed into hunks.

Parsing is strict and pure: a path escaping the tree, a malformed hunk, CRLF
noise or a series that disagrees with its folder each stop with one line naming
the patch (and line) at fault. The diff part is read by series/diff.py.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import re
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from forklift.errors import ForkliftError
from forklift.fsio import read_bounded, utf8_text
from forklift.series.diff import (
    FilePatch,
    Hunk,  # noqa: F401  (re-exported: callers build reversed hunks)
    PatchError,
    parse_files,
)
from forklift.series.headers import Header, parse_header

if TYPE_CHECKING:
    from forklift.config.schema import Applier, Unlisted

SERIES_FILE = "series"
PATCH_SUFFIXES = tuple(f"{kind}{z}" for kind in (".patch", ".diff") for z in ("", ".gz", ".bz2", ".xz"))
_DECOMPRESS = {".gz": gzip.decompress, ".bz2": bz2.decompress, ".xz": lzma.decompress}
_DIRECTIVE = re.compile(r"^#\s*forklift:(.*)$")
_SKIP = re.compile(r"skip\s+(\S+)\s+--\s+(\S.*)")
# Where the diff begins: a '--- ' line counts only with its '+++ ' line after it, so a '--- note' in a
# preamble does not swallow the header lines that follow it.
_DIFF_START = re.compile(r"^(diff --git |--- .*\n\+\+\+ |Index: )", re.MULTILINE)
# CRLF noise: the patch file itself was converted. Content lines may end in CRLF legitimately
# (upstream ships CRLF files, e.g. vllm/config/fault_tolerance.py in 0.32.0); diff lines may not.
_CRLF_CONTROL = re.compile(
    r"^(?:diff --git |--- |\+\+\+ |@@ |index |new file mode |deleted file mode ).*\r$", re.MULTILINE
)


@dataclass(frozen=True)
class Patch:
    name: str
    text: str
    header: Header
    files: tuple[FilePatch, ...]
    strip: int = 1
    root: str = ""  # tree folder its paths are relative to (`[series] root`); paths below already carry it

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the patch reads or writes, in patch order."""
        seen: dict[str, None] = {}
        for f in self.files:
            for p in (f.old_path, f.new_path):
                if p:
                    seen[p] = None
        return tuple(seen)


@dataclass(frozen=True)
class Skipped:
    """A series entry kept in the folder (and every table) but not applied, with the reason why."""

    name: str
    reason: str
    after: int  # how many applied entries come before it in the series file


@dataclass(frozen=True)
class Series:
    folder: Path
    patches: tuple[Patch, ...] = field(default_factory=tuple)
    retired: tuple[str, ...] = field(default_factory=tuple)  # '# retired: ...' lines of the series file
    skipped: tuple[Skipped, ...] = field(default_factory=tuple)
    digests: dict[str, str] = field(default_factory=dict)  # entry -> sha256 of the file as it is in the folder
    notes: tuple[str, ...] = ()  # warnings that do not fail the gate (unlisted patch files)
    root: str = ""  # tree folder the patches are written against
    applier: Applier = "gnu-patch"  # whose rules every application of this series follows

    def by_name(self, name: str) -> Patch:
        for patch in self.patches:
            if patch.name == name:
                return patch
        raise ForkliftError(f"{self.folder / SERIES_FILE}: no patch named {name!r} in the series")


def split_header(text: str) -> tuple[str, str]:
    """(header text, diff text): the header is everything before the first diff line."""
    m = _DIFF_START.search(text)
    if not m:
        return text, ""
    return text[: m.start()], text[m.start() :]


def parse_patch(name: str, text: str, strip: int = 1) -> Patch:
    """Parse one patch file's text; every problem is one line naming the patch. An empty file is a
    patch with no files (quilt skips it; git apply refuses it: the engine says which)."""
    if text == "":
        return Patch(name=name, text=text, header=parse_header(""), files=(), strip=strip)
    header_text, diff_text = split_header(text)
    if not diff_text.strip():
        raise PatchError(f"{name}: contains no diff")
    first_line = text[: len(text) - len(diff_text)].count("\n") + 1
    if "\r" in diff_text and (m := _CRLF_CONTROL.search(diff_text)):  # the scan costs; most patches hold no CR
        line_no = first_line + diff_text[: m.start()].count("\n")
        raise PatchError(f"{name}: line {line_no}: CRLF line ending on a diff line (save the patch with LF endings)")
    files = parse_files(name, diff_text.encode("utf-8", "surrogateescape"), strip, first_line)
    if not files:
        raise PatchError(f"{name}: contains no diff")
    return Patch(name=name, text=text, header=parse_header(header_text), files=files, strip=strip)


def decode_series(raw: bytes, where: Path) -> str:
    """The series file as text; a byte that is not UTF-8 is one line naming the file and line."""
    return utf8_text(raw, where, "the series file", PatchError)


def _entry_name(name: str, where: Path, number: int) -> str:
    """A series entry is a path below the series folder (quilt and dpkg-source allow subfolders)."""
    path = PurePosixPath(name)
    if name.startswith("/") or ".." in path.parts or "\\" in name or path.as_posix() != name.rstrip("/"):
        raise PatchError(f"{where}:{number}: {name!r} must be a relative path inside the series folder")
    return name


def with_root(patch: Patch, root: str) -> Patch:
    """The patch with `root/` before every path, as `git apply --directory=ROOT` and `patch -d ROOT` read it."""
    if not root:
        return patch

    def under(path: str | None) -> str | None:
        return f"{root}/{path}" if path is not None else None

    files = tuple(replace(f, old_path=under(f.old_path), new_path=under(f.new_path)) for f in patch.files)
    return replace(patch, files=files, root=root)


def unrooted(path: str, root: str) -> str:
    """A tree path as the patches under `root` name it."""
    return path[len(root) + 1 :] if root and path.startswith(root + "/") else path


def parse_series_file(text: str, where: Path) -> list[tuple[str, int]]:
    """quilt's series format: 'name [-pN]' per line, '#' comments, blank lines. Returns (name, strip)."""
    entries: list[tuple[str, int]] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        name, *options = line.split()
        strip = 1
        for option in options:
            if m := re.fullmatch(r"-p(\d+)", option):
                strip = int(m.group(1))
            else:
                raise PatchError(
                    f"{where}:{number}: unsupported series option {option!r} (forklift reads only -pN, e.g. -p1)"
                )
        _entry_name(name, where, number)
        if name in seen:
            raise PatchError(f"{where}:{number}: duplicate entry {name!r} (first on line {seen[name]})")
        seen[name] = number
        entries.append((name, strip))
    return entries


def retired_entries(text: str) -> tuple[str, ...]:
    """Retired patches are kept as '# retired: NAME (why)' comments, so PATCHES.md can list them."""
    return tuple(m.group(1).strip() for m in re.finditer(r"^#\s*retired:\s*(.+)$", text, re.MULTILINE))


def skip_line(skip: Skipped) -> str:
    """The series line that keeps a patch in the folder but out of the apply (quilt reads it as a comment)."""
    return f"# forklift: skip {skip.name} -- {skip.reason}"


def skip_entries(text: str, where: Path) -> tuple[Skipped, ...]:
    """'# forklift: skip NAME -- reason' lines, each with the number of applied entries before it."""
    skipped: list[Skipped] = []
    applied = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line.startswith("#"):
            applied += bool(re.sub(r"(^|\s)#.*$", "", raw).strip())
            continue
        directive = _DIRECTIVE.match(line)
        if not directive:
            continue
        m = _SKIP.fullmatch(directive.group(1).strip())
        if not m:
            raise PatchError(f"{where}:{number}: expected '# forklift: skip NAME -- reason', got {line!r}")
        skipped.append(Skipped(_entry_name(m.group(1), where, number), m.group(2).strip(), applied))
    return tuple(skipped)


def read_series_part(path: Path, what: str) -> bytes:
    """A file of the series (the series file, a patch) through the bounded reader: a FIFO, a device or
    a folder is one PatchError naming it, never a read that blocks or fills memory."""
    try:
        return read_bounded(path, what)
    except ForkliftError as exc:
        raise PatchError(str(exc)) from None


def read_patch_file(path: Path, name: str) -> bytes:
    """A patch file's bytes, uncompressed when its name says gzip, bzip2 or xz (as quilt reads them)."""
    raw = read_series_part(path, "a patch")
    opener = _DECOMPRESS.get(path.suffix)
    if opener is None:
        return raw
    try:
        return opener(raw)
    except (OSError, EOFError, ValueError) as exc:
        raise PatchError(f"{name}: not a valid {path.suffix[1:]} file: {exc}") from None


def patch_files(folder: Path) -> list[str]:
    """Every file below `folder` whose name says it is a patch, as series-relative paths."""
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and any(p.name.endswith(suffix) for suffix in PATCH_SUFFIXES)
    )


def series_folder_files(folder: Path) -> list[Path]:
    """The files a step that rewrites the series may write or remove: the folder's own files and every
    patch file below it (a series may list entries in subfolders)."""
    if not folder.is_dir():
        return []
    return [*(p for p in folder.iterdir() if p.is_file()), *(folder / name for name in patch_files(folder))]


def load_series(
    folder: Path, unlisted: Unlisted = "warn", root: str = "", applier: Applier = "gnu-patch", empty: bool = False
) -> Series:
    """Read and parse the whole series. Every entry must be a file in the folder; a patch file the
    series does not list is a warning (Debian and quilt tolerate them) or, with unlisted="error", an error.
    `root` is the folder of the tree the patches are written against (like `patch -d` / `git apply --directory`);
    `applier` is whose rules the series is applied by, wherever it is applied. An `empty` series (a fork
    before its first patch) is read as one, not refused."""
    series_file = folder / SERIES_FILE
    if not series_file.exists():
        raise PatchError(f"{series_file}: no series file")
    series_text = decode_series(read_series_part(series_file, "the series file"), series_file)
    entries = parse_series_file(series_text, series_file)
    skipped = skip_entries(series_text, series_file)
    listed = {name for name, _ in entries}
    for skip in skipped:
        if skip.name in listed:
            raise PatchError(f"{series_file}: {skip.name!r} is both listed and skipped")
    if not entries and not empty:
        raise PatchError(f"{series_file}: the series is empty: nothing to check")
    for name in [name for name, _ in entries] + [s.name for s in skipped]:
        if not (folder / name).exists():
            raise PatchError(f"{series_file}: lists {name!r}, which is not in {folder}")
    kept = listed | {s.name for s in skipped}
    stray = [name for name in patch_files(folder) if name not in kept]
    if stray and unlisted == "error":
        raise PatchError(f"{folder / stray[0]}: patch file is not listed in {series_file}")
    patches = []
    digests: dict[str, str] = {}
    for name, strip in entries:
        digests[name] = hashlib.sha256(read_series_part(folder / name, "a patch")).hexdigest()
        raw = read_patch_file(folder / name, name)
        patches.append(with_root(parse_patch(name, raw.decode("utf-8", "surrogateescape"), strip), root))
    for skip in skipped:
        digests[skip.name] = hashlib.sha256(read_series_part(folder / skip.name, "a patch")).hexdigest()
    notes = tuple(f"{folder / name}: patch file is not listed in {series_file} (not applied)" for name in stray)
    return Series(
        folder=folder,
        patches=tuple(patches),
        retired=retired_entries(series_text),
        skipped=skipped,
        digests=digests,
        notes=notes,
        root=root,
        applier=applier,
    )
