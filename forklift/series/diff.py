"""Reading the diff part of a patch file: file stanzas, git extended headers and unified hunks.

Read as GNU patch and git apply read them, not as a strict parser would:
text between stanzas is ignored, an empty line inside a hunk is an empty
context line, a hunk ends when its stated line counts are met (a blank line
after the last hunk is not part of it), git's C-quoted names are unquoted,
`copy from/to` copies. What neither tool would do without guessing (a NUL in
a name, both sides /dev/null, a line number past GNU's range, a hunk cut
short) is one line naming the patch, the line and what is wrong; so is a
quoted name holding a line break, which no one-line table or message shows.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Literal

from forklift.errors import ForkliftError

SYMLINK_MODE = 0o120000
LINE_MAX = 2**63 - 1  # GNU patch's LINENUM_MAX on 64-bit: beyond it the hunk header is malformed
_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_GIT_HEADERS = (
    b"old mode ",
    b"new mode ",
    b"deleted file mode ",
    b"new file mode ",
    b"copy from ",
    b"copy to ",
    b"rename from ",
    b"rename to ",
    b"rename old ",
    b"rename new ",
    b"similarity index ",
    b"dissimilarity index ",
    b"index ",
)
_ESCAPES = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13, b'"': 34, b"\\": 92}


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
    blank_at_end: bool = False  # ends in blank lines, one or more of them added (git's blank-at-eof reads it)

    @property
    def first(self) -> int:
        """GNU patch's first line of the hunk: a pure insertion (-N,0) goes after line N."""
        return self.old_start if self.old else self.old_start + 1


@dataclass(frozen=True)
class FilePatch:
    old_path: str | None  # None: the patch creates the file
    new_path: str | None  # None: the patch deletes the file
    hunks: tuple[Hunk, ...]
    copy: bool = False  # git's copy from/to: old_path stays
    rename: bool = False  # git's rename from/to lines
    binary: Literal["", "data-less", "data"] = ""  # 'Binary files ... differ' / 'GIT binary patch'
    mode: int | None = None  # the file mode git states for it (120000: a symlink)
    git: bool = False  # a `diff --git` stanza (git's rules for names and creation)
    new_mode: int | None = None  # `new file mode` / `new mode`: the mode the file gets (else it keeps its own)
    # (old, new) of a git rename or copy as GNU patch reads it: the ---/+++ names, not the rename lines'
    gnu_names: tuple[str | None, str | None] | None = None
    # a stanza of one file whose names differ (---/+++, or a name GNU cuts at a space): GNU patches the
    # best of those that exist, else the best of all (`_best_name`)
    gnu_choices: tuple[str, ...] = ()
    git_refuses: str = ""  # why git apply refuses the stanza as written (its own words)

    def as_gnu_reads_it(self, exists: Callable[[str], bool]) -> FilePatch:
        """This stanza with the paths GNU patch would patch in a tree where `exists` says which files are."""
        if self.gnu_choices:
            path = _best_name([n for n in self.gnu_choices if exists(n)] or list(self.gnu_choices))
            old, new = (path if self.old_path is not None else None), (path if self.new_path is not None else None)
            return replace(self, old_path=old, new_path=new, gnu_choices=())
        if self.gnu_names is None:
            return self
        old, new = self.gnu_names
        return replace(self, old_path=old, new_path=new, gnu_names=None)

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def symlink(self) -> bool:
        return self.mode is not None and self.mode & 0o170000 == SYMLINK_MODE

    @property
    def added(self) -> int:
        return sum(len(h.added) for h in self.hunks)

    @property
    def removed(self) -> int:
        return sum(len(h.removed) for h in self.hunks)


def unquote(raw: bytes) -> bytes:
    """git's C-style quoted name ("a/caf\\303\\251.py") as its bytes; an unquoted name as it is."""
    if not (len(raw) >= 2 and raw.startswith(b'"') and raw.endswith(b'"')):
        return raw
    body, out, i = raw[1:-1], bytearray(), 0
    while i < len(body):
        if body[i : i + 1] != b"\\":
            out.append(body[i])
            i += 1
        elif re.match(rb"[0-7]{3}", body[i + 1 : i + 4]):
            out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            out.append(_ESCAPES.get(body[i + 1 : i + 2], body[i + 1]) if i + 1 < len(body) else 92)
            i += 2
    return bytes(out)


def _gnu_header_name(raw: bytes) -> bytes:
    """GNU patch's reading of an unquoted ---/+++ name: internal spaces only when a tab follows."""
    raw = raw.rstrip(b"\r\n")
    if raw.startswith(b'"') or b"\t" in raw:
        return _header_name(raw)
    return raw.split(None, 1)[0] if raw.strip() else raw


def _header_name(raw: bytes) -> bytes:
    """The name on a ---/+++ line as git reads it: quoted, or up to the tab before a timestamp."""
    raw = raw.rstrip(b"\r\n")
    if raw.startswith(b'"'):
        end = re.match(rb'"(?:[^"\\]|\\.)*"', raw)
        return unquote(end.group(0)) if end else raw
    return raw.split(b"\t", 1)[0].rstrip(b" ")


_QUOTED_PAIR = re.compile(rb'("(?:[^"\\]|\\.)*"|[^" ]+) ("(?:[^"\\]|\\.)*"|[^" ]+)')


def _git_names(raw: bytes) -> tuple[bytes, bytes] | None:
    """The two names of a `diff --git A B` line: quoted, space-free, or (names with spaces) the
    two equal halves or the split before ' b/', as git reads them."""
    if m := _QUOTED_PAIR.fullmatch(raw):
        return unquote(m.group(1)), unquote(m.group(2))
    half = len(raw) // 2
    if (
        len(raw) % 2
        and raw[half : half + 1] == b" "
        and raw[:half].split(b"/", 1)[-1] == raw[half + 1 :].split(b"/", 1)[-1]
    ):
        return raw[:half], raw[half + 1 :]
    cut = raw.find(b" b/")
    return (raw[:cut], raw[cut + 1 :]) if cut > 0 else None


class _Reader:
    """The diff's lines (bytes, keepends) with a cursor, for error messages by patch line number."""

    def __init__(self, name: str, data: bytes, first_line: int) -> None:
        self.name = name
        self.lines = split_lines(data)
        self.i = 0
        self.first_line = first_line

    def fail(self, message: str, at: int | None = None) -> PatchError:
        return PatchError(f"{self.name}: line {self.first_line + (self.i if at is None else at)}: {message}")

    def peek(self) -> bytes | None:
        return self.lines[self.i] if self.i < len(self.lines) else None


def split_lines(data: bytes) -> list[bytes]:
    """Lines with their endings, split on b"\\n" only (bytes.splitlines also splits on \\r).

    BytesIO.readlines splits so, in C: no copy of each line to put its ending back.
    """
    return io.BytesIO(data).readlines()


def tree_path(name: str, raw: bytes, strip: int, where: str = "") -> str | None:
    """The tree-relative path of a diff header name, or None for /dev/null; refuse escapes and NULs."""
    if raw == b"/dev/null":
        return None
    shown = raw.decode("utf-8", "backslashreplace")
    if b"\0" in raw:
        raise PatchError(f"{name}: {where}path {shown!r} contains a NUL byte")
    if b"\n" in raw or b"\r" in raw:  # only a C-quoted git name holds one; tables and messages give a path one line
        raise PatchError(f"{name}: {where}path {shown!r} contains a line break")
    text = raw.decode("utf-8", "surrogateescape")
    parts = [part for part in text.split("/") if part not in ("", ".")]  # as a relative PurePosixPath's, no Path
    if text.startswith("/") or (len(parts) <= strip and strip):
        raise PatchError(f"{name}: {where}path {shown!r} is absolute or has no component left after -p{strip}")
    rel = parts[strip:]
    if ".." in rel or not rel:
        raise PatchError(f"{name}: {where}path {shown!r} escapes the tree")
    return "/".join(rel)


def _number(reader: _Reader, digits: bytes | None, default: int = 1) -> int:
    if digits is None:
        return default
    if len(digits) > 19 or int(digits) >= LINE_MAX:
        raise reader.fail(f"line number {digits.decode()} is too large")
    return int(digits)


SPACE, MINUS, PLUS, BACKSLASH = b" -+\\"


def _hunk(reader: _Reader, path: str) -> Hunk:
    """One hunk at the cursor: read until its stated counts are met (GNU patch's rules)."""
    header_at = reader.i
    m = _HUNK.match(reader.lines[reader.i])
    if not m:
        raise reader.fail("malformed hunk header")
    old_start, old_count = _number(reader, m.group(1)), _number(reader, m.group(2))
    new_start, new_count = _number(reader, m.group(3)), _number(reader, m.group(4))
    if old_start + old_count >= LINE_MAX or new_start + new_count >= LINE_MAX:
        raise reader.fail("line number is too large")
    lines, i, end = reader.lines, reader.i + 1, len(reader.lines)
    old: list[bytes] = []
    new: list[bytes] = []
    added: list[bytes] = []
    removed: list[bytes] = []
    kinds: list[int] = []
    blank_run = 0  # added blank lines since the last other line (blank context lines neither count nor reset)
    while len(old) < old_count or len(new) < new_count:
        if i < end:
            line = lines[i]
            i += 1
        elif new_count - len(new) <= 3 and new_count - len(new) == old_count - len(old):
            line = b" \n"  # GNU patch: trailing blank context lines were chopped by a mailer
        else:
            raise reader.fail(f"{path}: hunk at line {old_start} ends early", header_at)
        kind, value = line[0], line[1:]
        if kind in (10, 9):  # an empty context line whose space was eaten (GNU and git read it so)
            kind, value = SPACE, line
        if kind == SPACE:
            old.append(value)
            new.append(value)
        elif kind == MINUS:
            old.append(value)
            removed.append(value)
        elif kind == PLUS:
            new.append(value)
            added.append(value)
        elif kind == BACKSLASH:
            _no_newline(kinds, old, new, added, removed)
            continue
        else:
            reader.i = i - 1
            raise reader.fail(f"{path}: hunk at line {old_start}: unexpected line {line[:40]!r}")
        if len(old) > old_count or len(new) > new_count:
            reader.i = i - 1
            raise reader.fail(f"{path}: hunk at line {old_start} has more lines than its header states")
        kinds.append(kind)
        blank = not value.strip(b" \t\r\n")
        blank_run = blank_run + 1 if kind == PLUS and blank else blank_run if kind == SPACE and blank else 0
    if i < end and lines[i][:1] == b"\\":
        i += 1
        _no_newline(kinds, old, new, added, removed)
    reader.i = i
    lead = next((n for n, k in enumerate(kinds) if k != SPACE), len(kinds))
    trail = next((n for n, k in enumerate(reversed(kinds)) if k != SPACE), len(kinds))
    if lead == len(kinds):
        raise reader.fail(f"{path}: hunk at line {old_start} changes nothing", header_at)
    return Hunk(old_start, new_start, tuple(old), tuple(new), tuple(added), tuple(removed), lead, trail, blank_run > 0)


def _no_newline(kinds: list[int], old: list[bytes], new: list[bytes], added: list[bytes], removed: list[bytes]) -> None:
    """'\\ No newline at end of file' applies to the line before it, on the side(s) it was on."""
    previous = kinds[-1] if kinds else None
    if previous in (SPACE, MINUS) and old:
        old[-1] = old[-1].rstrip(b"\n")
        if previous == MINUS:
            removed[-1] = removed[-1].rstrip(b"\n")
    if previous in (SPACE, PLUS) and new:
        new[-1] = new[-1].rstrip(b"\n")
        if previous == PLUS:
            added[-1] = added[-1].rstrip(b"\n")


def _hunks(reader: _Reader, path: str) -> tuple[Hunk, ...]:
    hunks = []
    while (line := reader.peek()) is not None and line.startswith(b"@@ -"):
        hunks.append(_hunk(reader, path))
    return tuple(hunks)


def _best_name(names: list[str]) -> str:
    """GNU patch's choice between two differing names of a plain diff: fewest components, then
    shortest base name, then shortest name (it never renames for a non-git diff)."""
    return min(names, key=lambda n: (n.count("/"), len(n.rsplit("/", 1)[-1]), len(n)))


def _plain_stanza(reader: _Reader, strip: int) -> FilePatch:
    """--- / +++ / hunks, without a git header."""
    name = reader.name
    old_raw, new_raw = reader.lines[reader.i][4:], reader.lines[reader.i + 1][4:]
    old = tree_path(name, _header_name(old_raw), strip)
    new = tree_path(name, _header_name(new_raw), strip)
    reader.i += 2
    if old is None and new is None:
        raise reader.fail("both sides of the diff are /dev/null: no file to patch", reader.i - 2)
    gnu = [tree_path(name, _gnu_header_name(raw), strip) for raw in (old_raw, new_raw)]
    path = new or old or ""
    hunks = _hunks(reader, path)
    if not hunks:
        raise reader.fail(f"{path}: no hunks after the ---/+++ lines")
    if old is not None and new is not None and old != new:
        old = new = _best_name([old, new])
    return FilePatch(old_path=old, new_path=new, hunks=hunks, gnu_choices=_choices(gnu, new or old))


def _git_stanza(reader: _Reader, strip: int) -> FilePatch:
    """`diff --git a/x b/y`, its extended headers, then hunks or a binary stanza."""
    name, at = reader.name, reader.i
    names = _git_names(reader.lines[at][len(b"diff --git ") :].rstrip(b"\r\n"))
    if names is None:
        raise reader.fail("cannot read the two names of this diff --git line")
    old: str | None = tree_path(name, names[0], strip)
    new: str | None = tree_path(name, names[1], strip)
    reader.i += 1
    git_line = old, new
    created = deleted = copy = renamed = False
    mode: int | None = None
    new_mode: int | None = None
    binary: Literal["", "data-less", "data"] = ""
    while (line := reader.peek()) is not None:
        body = line.rstrip(b"\r\n")
        if body.startswith(b"new file mode "):
            created, mode = True, int(body[14:], 8)
            new_mode = mode
        elif body.startswith(b"deleted file mode "):
            deleted, mode = True, int(body[18:], 8)
        elif body.startswith(b"new mode ") or (body.startswith(b"old mode ") and mode is None):
            mode = int(body[9:], 8)
            new_mode = mode if body.startswith(b"new mode ") else new_mode
        elif body.startswith((b"copy from ", b"rename from ", b"rename old ")):
            copy, renamed = body.startswith(b"copy"), renamed or body.startswith(b"rename")
            old = tree_path(name, unquote(body.split(b" ", 2)[2]), 0)
        elif body.startswith((b"copy to ", b"rename to ", b"rename new ")):
            new = tree_path(name, unquote(body.split(b" ", 2)[2]), 0)
        elif body.startswith(b"index ") and mode is None and body.count(b" ") == 2:
            mode = int(body.rsplit(b" ", 1)[1], 8) if body.rsplit(b" ", 1)[1].isdigit() else None
        elif not body.startswith(_GIT_HEADERS):
            break
        reader.i += 1
    line = reader.peek()
    hunks: tuple[Hunk, ...] = ()
    sides: tuple[str | None, str | None] | None = None  # the ---/+++ names as git reads them
    gnu_sides = git_line
    refuses = ""
    if (
        line is not None
        and line.startswith(b"--- ")
        and (reader.lines[reader.i + 1 : reader.i + 2] or [b""])[0][:4] == b"+++ "
    ):
        raw = (line[4:], reader.lines[reader.i + 1][4:])
        sides = (tree_path(name, _header_name(raw[0]), strip), tree_path(name, _header_name(raw[1]), strip))
        if sides == (None, None):
            raise reader.fail("both sides of the diff are /dev/null: no file to patch")
        gnu_sides = (tree_path(name, _gnu_header_name(raw[0]), strip), tree_path(name, _gnu_header_name(raw[1]), strip))
        created, deleted = created or sides[0] is None, deleted or sides[1] is None
        refuses = _inconsistent(sides, (old, new), copy or renamed)
        if not (copy or renamed):  # git takes the ---/+++ names (a differing pair renames)
            old, new = sides[0] or old, sides[1] or new
        reader.i += 2
        hunks = _hunks(reader, sides[1] or sides[0] or "")
    elif line is not None and line.startswith((b"Binary files ", b"Files ")) and line.rstrip().endswith(b"differ"):
        binary = "data-less"
        reader.i += 1
    elif line is not None and line.startswith(b"GIT binary patch"):
        binary = "data"
        reader.i += 1
        while (rest := reader.peek()) is not None and not rest.startswith(b"diff --git "):
            reader.i += 1
    if created:
        old = None
    if deleted:
        new = None
    if old is None and new is None:
        raise reader.fail("both sides of the diff are /dev/null: no file to patch", at)
    if sides is None and not (copy or renamed) and old is not None and new is not None and old != new:
        raise reader.fail(f"diff --git names two files ({old}, {new}) without rename or copy lines", at)
    gnu = _gnu_git_names(gnu_sides, created, deleted)
    moved = copy or renamed
    return FilePatch(
        old_path=old,
        new_path=new,
        hunks=hunks,
        copy=copy,
        rename=renamed,
        binary=binary,
        mode=mode,
        git=True,
        new_mode=new_mode,
        gnu_names=gnu if moved and gnu != (old, new) else None,
        gnu_choices=() if moved else _choices(gnu, new or old),
        git_refuses=refuses,
    )


def _inconsistent(sides: tuple[str | None, str | None], named: tuple[str | None, str | None], moved: bool) -> str:
    """git apply's check of the ---/+++ names against the rename/copy names: any other name is refused."""
    if not moved:
        return ""
    for side, dashes, have, want in (("old", "---", sides[0], named[0]), ("new", "+++", sides[1], named[1])):
        if have is not None and have != want:
            return f"inconsistent {side} filename ({dashes} names {have}, the rename/copy line {want})"
    return ""


def _choices(names: Iterable[str | None], read_as: str | None) -> tuple[str, ...]:
    """The names GNU patch chooses among, when they are not simply the one forklift reads."""
    choices = tuple(dict.fromkeys(n for n in names if n is not None))
    return choices if len(choices) > 1 or (choices and choices[0] != read_as) else ()


def _gnu_git_names(sides: tuple[str | None, str | None], created: bool, deleted: bool) -> tuple[str | None, str | None]:
    """GNU patch's names in a git stanza: the ---/+++ ones (else the diff --git ones); it notes a rename
    or copy but ignores the names on those lines."""
    old, new = sides
    return (None if created else old), (None if deleted else new)


def parse_files(name: str, diff: bytes, strip: int, first_line: int = 1) -> tuple[FilePatch, ...]:
    """Every file stanza of a diff (`first_line`: the diff's first line number in the patch file)."""
    reader = _Reader(name, diff, first_line)
    files = []
    while (line := reader.peek()) is not None:
        if line.startswith(b"diff --git "):
            files.append(_git_stanza(reader, strip))
        elif line.startswith(b"--- ") and (reader.lines[reader.i + 1 : reader.i + 2] or [b""])[0][:4] == b"+++ ":
            files.append(_plain_stanza(reader, strip))
        elif line.startswith(b"@@ -"):
            raise reader.fail("hunk without a ---/+++ file header")
        else:
            reader.i += 1  # text between stanzas: both tools skip it
    return tuple(files)
