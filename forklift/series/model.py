"""The patch series: a quilt `series` file, the patch files it names, and each patch parsed into hunks.

Parsing is strict and pure: a path escaping the tree, a malformed hunk, CRLF
noise, a binary diff or a series that disagrees with its folder each stop with
one line naming the patch (and line) at fault.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from forklift.errors import ForkliftError
from forklift.series.headers import Header, parse_header

SERIES_FILE = "series"
PATCH_SUFFIXES = (".patch", ".diff")
_DIFF_START = re.compile(r"^(diff --git |--- |Index: )", re.MULTILINE)
# CRLF noise: the patch file itself was converted. Content lines may end in CRLF legitimately
# (upstream ships CRLF files, e.g. vllm/config/fault_tolerance.py in 0.32.0); diff lines may not.
_CRLF_CONTROL = re.compile(
    r"^(?:diff --git |--- |\+\+\+ |@@ |index |new file mode |deleted file mode ).*\r$", re.MULTILINE
)


class PatchError(ForkliftError):
    """A patch file that cannot be trusted as written."""


@dataclass(frozen=True)
class Hunk:
    """One hunk as lines of bytes (keepends); `old` is what must be found, `new` what replaces it."""

    old_start: int
    new_start: int
    old: tuple[bytes, ...]
    new: tuple[bytes, ...]
    added: tuple[bytes, ...]
    removed: tuple[bytes, ...]
    leading_context: int
    trailing_context: int


@dataclass(frozen=True)
class FilePatch:
    old_path: str | None  # None: the patch creates the file
    new_path: str | None  # None: the patch deletes the file
    hunks: tuple[Hunk, ...]

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def added(self) -> int:
        return sum(len(h.added) for h in self.hunks)

    @property
    def removed(self) -> int:
        return sum(len(h.removed) for h in self.hunks)


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


def _tree_path(name: str, raw: str, strip: int) -> str | None:
    """The tree-relative path of a diff header path, or None for /dev/null; refuse escapes."""
    raw = raw.split("\t", 1)[0].strip()
    if raw == "/dev/null":
        return None
    parts = PurePosixPath(raw).parts
    if raw.startswith("/") or (len(parts) <= strip and strip):
        raise PatchError(f"{name}: path {raw!r} is absolute or has no component left after -p{strip}")
    rel = PurePosixPath(*parts[strip:])
    if ".." in rel.parts or not rel.parts:
        raise PatchError(f"{name}: path {raw!r} escapes the tree")
    return rel.as_posix()


def _hunk(name: str, path: str, h) -> Hunk:
    old: list[bytes] = []
    new: list[bytes] = []
    added: list[bytes] = []
    removed: list[bytes] = []
    kinds: list[str] = []
    for line in h:
        value = line.value.encode("utf-8", "surrogateescape")
        if line.line_type == "\\":
            # "\ No newline at end of file" applies to the line before it, on the side(s) it was on.
            previous = kinds[-1] if kinds else None
            if previous in (" ", "-") and old:
                old[-1] = old[-1].rstrip(b"\n")
                if previous == "-":
                    removed[-1] = removed[-1].rstrip(b"\n")
            if previous in (" ", "+") and new:
                new[-1] = new[-1].rstrip(b"\n")
                if previous == "+":
                    added[-1] = added[-1].rstrip(b"\n")
            continue
        kinds.append(line.line_type)
        if line.line_type in (" ", "-"):
            old.append(value)
        if line.line_type in (" ", "+"):
            new.append(value)
        if line.line_type == "+":
            added.append(value)
        if line.line_type == "-":
            removed.append(value)
    lead = next((i for i, k in enumerate(kinds) if k != " "), len(kinds))
    trail = next((i for i, k in enumerate(reversed(kinds)) if k != " "), len(kinds))
    if lead == len(kinds):
        raise PatchError(f"{name}: {path}: hunk @@ -{h.source_start} @@ changes nothing")
    return Hunk(
        old_start=h.source_start,
        new_start=h.target_start,
        old=tuple(old),
        new=tuple(new),
        added=tuple(added),
        removed=tuple(removed),
        leading_context=lead,
        trailing_context=trail,
    )


def split_header(text: str) -> tuple[str, str]:
    """(header text, diff text): the header is everything before the first diff line."""
    m = _DIFF_START.search(text)
    if not m:
        return text, ""
    return text[: m.start()], text[m.start() :]


def parse_patch(name: str, text: str, strip: int = 1) -> Patch:
    """Parse one patch file's text; every problem is one line naming the patch."""
    header_text, diff_text = split_header(text)
    if not diff_text.strip():
        raise PatchError(f"{name}: contains no diff")
    if m := _CRLF_CONTROL.search(diff_text):
        line_no = text[: len(text) - len(diff_text) + m.start()].count("\n") + 1
        raise PatchError(f"{name}: line {line_no}: CRLF line ending on a diff line (save the patch with LF endings)")
    try:
        parsed = PatchSet(diff_text)
    except UnidiffParseError as exc:
        raise PatchError(f"{name}: malformed diff: {str(exc).strip()}") from None
    files = []
    for pf in parsed:
        if pf.is_binary_file:
            raise PatchError(f"{name}: {pf.path}: binary diffs are not supported")
        old_path = _tree_path(name, pf.source_file, strip)
        new_path = _tree_path(name, pf.target_file, strip)
        if pf.is_rename and pf.patch_info:
            old_path, new_path = _rename_paths(name, str(pf.patch_info), old_path, new_path)
        path = new_path or old_path or ""
        if not pf and old_path == new_path:
            raise PatchError(f"{name}: {path}: no hunks (mode-only or empty diffs are not supported)")
        files.append(FilePatch(old_path=old_path, new_path=new_path, hunks=tuple(_hunk(name, path, h) for h in pf)))
    if not files:
        raise PatchError(f"{name}: contains no diff")
    return Patch(name=name, text=text, header=parse_header(header_text), files=tuple(files), strip=strip)


def _rename_paths(name: str, info: str, old: str | None, new: str | None) -> tuple[str | None, str | None]:
    """git's 'rename from/to' lines name tree paths without a prefix; check them like the others."""
    for line in info.splitlines():
        if line.startswith("rename from "):
            old = _tree_path(name, line[len("rename from ") :], 0)
        elif line.startswith("rename to "):
            new = _tree_path(name, line[len("rename to ") :], 0)
    return old, new


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
