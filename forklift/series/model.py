"""The patch series: a quilt `series` file, the patch files it names, and each patch parsed into hunks.

Parsing is strict and pure: a path escaping the tree, a malformed hunk, CRLF
noise or a series that disagrees with its folder each stop with one line naming
the patch (and line) at fault. The diff part is read by series/diff.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from forklift.errors import ForkliftError
from forklift.series.diff import (
    FilePatch,
    Hunk,  # noqa: F401  (re-exported: callers build reversed hunks)
    PatchError,
    parse_files,
)
from forklift.series.headers import Header, parse_header

SERIES_FILE = "series"
PATCH_SUFFIXES = (".patch", ".diff")
_DIFF_START = re.compile(r"^(diff --git |--- |Index: )", re.MULTILINE)
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
class Series:
    folder: Path
    patches: tuple[Patch, ...] = field(default_factory=tuple)
    retired: tuple[str, ...] = field(default_factory=tuple)  # '# retired: ...' lines of the series file

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
    if m := _CRLF_CONTROL.search(diff_text):
        line_no = first_line + diff_text[: m.start()].count("\n")
        raise PatchError(f"{name}: line {line_no}: CRLF line ending on a diff line (save the patch with LF endings)")
    files = parse_files(name, diff_text.encode("utf-8", "surrogateescape"), strip, first_line)
    if not files:
        raise PatchError(f"{name}: contains no diff")
    return Patch(name=name, text=text, header=parse_header(header_text), files=files, strip=strip)


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
            if m := re.fullmatch(r"-p(\d)", option):
                strip = int(m.group(1))
            else:
                raise PatchError(f"{where}:{number}: unsupported series option {option!r} (only -pN)")
        if "/" in name or name in (".", ".."):
            raise PatchError(f"{where}:{number}: {name!r} must be a file name in the series folder")
        if name in seen:
            raise PatchError(f"{where}:{number}: duplicate entry {name!r} (first on line {seen[name]})")
        seen[name] = number
        entries.append((name, strip))
    return entries


def retired_entries(text: str) -> tuple[str, ...]:
    """Retired patches are kept as '# retired: NAME (why)' comments, so PATCHES.md can list them."""
    return tuple(m.group(1).strip() for m in re.finditer(r"^#\s*retired:\s*(.+)$", text, re.MULTILINE))


def load_series(folder: Path) -> Series:
    """Read and parse the whole series; the series file and the folder must agree both ways."""
    series_file = folder / SERIES_FILE
    try:
        series_text = series_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PatchError(f"{series_file}: no series file") from None
    entries = parse_series_file(series_text, series_file)
    if not entries:
        raise PatchError(f"{series_file}: the series is empty: nothing to check")
    listed = {name for name, _ in entries}
    for name, _ in entries:
        if not (folder / name).is_file():
            raise PatchError(f"{series_file}: lists {name!r}, which is not in {folder}")
    unlisted = sorted(p.name for p in folder.iterdir() if p.suffix in PATCH_SUFFIXES and p.name not in listed)
    if unlisted:
        raise PatchError(f"{folder / unlisted[0]}: patch file is not listed in {series_file}")
    patches = []
    for name, strip in entries:
        raw = (folder / name).read_bytes()
        patches.append(parse_patch(name, raw.decode("utf-8", "surrogateescape"), strip))
    return Series(folder=folder, patches=tuple(patches), retired=retired_entries(series_text))
