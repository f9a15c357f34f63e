"""File I/O every stage shares: the one atomic writer, the bounded file and JSON readers, the safe tree reader.

Bottom layer: imports nothing from forklift.
"""

from __future__ import annotations

import errno
import fcntl
import glob
import json
import math
import os
import stat
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from forklift.errors import ForkliftError, UsageError

# A reader of a tree's files by relative path; None means the file is absent.
Reader = Callable[[str], "bytes | None"]

# Bounds on what one input file may cost (benchmarks/hostile_inputs.py measures them): at most 64 MiB read,
# and JSON parsed only when its objects would take at most 3x that. Parsed, a receipt forklift wrote takes
# about 1.5x its text (estimated 2.5x); a hostile `[{},{},...]` 20x. FORKLIFT_MAX_FILE_MIB raises both.
MAX_FILE_MIB = 64
PARSED_PER_BYTE = 3
MAX_DEPTH = 64  # receipts nest about 6 deep; a cohort message about 5
MAX_INT_DIGITS = 40  # a count or a byte size; Python itself refuses 4,300 digits with a traceback
LIMIT_ENV = "FORKLIFT_MAX_FILE_MIB"


def env_number(
    var: str, whole: bool = False, *, zero: bool = False, unit: str = "", environ: Mapping[str, str] | None = None
) -> float | None:
    """The number environment variable `var` sets (None when unset or blank): finite, above zero (or at least
    zero, with `zero`), whole with `whole`; any other value is one UsageError line naming the variable."""
    text = (os.environ if environ is None else environ).get(var, "").strip()
    if not text:
        return None
    try:
        value: float = int(text) if whole else float(text)
    except ValueError:
        value = -1
    if not (0 <= value < math.inf) or (value == 0 and not zero):  # also refuses nan
        raise UsageError(f"{var}={text[:40]!r}: expected a positive number{unit}")
    return value


def max_file_bytes() -> int:
    given = os.environ.get(LIMIT_ENV)
    try:
        mib = float(given) if given else MAX_FILE_MIB
    except ValueError:
        raise ForkliftError(f"{LIMIT_ENV}={given!r}: expected a number of MiB") from None
    if not math.isfinite(mib) or mib <= 0:
        raise ForkliftError(f"{LIMIT_ENV}={given!r}: expected a positive number of MiB")
    return int(mib * 1024 * 1024)


@contextmanager
def open_regular(path: Path, what: str = "file", limit: int | None = None) -> Iterator[tuple[int, int]]:
    """A regular file of at most `limit` bytes, open for reading: (descriptor, size); anything else is one line.

    Opened without blocking (a FIFO named *.json would wait for a writer forever) and checked with
    fstat on the open descriptor: a device, a folder or a FIFO is refused, never read.
    """
    limit = max_file_bytes() if limit is None else limit
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ForkliftError(f"{path}: cannot read {what}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ForkliftError(f"{path}: not a regular file ({_kind(info.st_mode)}); {what} must be a plain file")
        if info.st_size > limit:
            raise ForkliftError(f"{path}: {what} of {info.st_size:,} bytes is over the {limit_words(limit)}")
        os.set_blocking(fd, True)
        yield fd, info.st_size
    except OSError as exc:
        raise ForkliftError(f"{path}: cannot read {what}: {exc.strerror}") from None
    finally:
        os.close(fd)


def read_bounded(path: Path, what: str = "file", limit: int | None = None) -> bytes:
    """A regular file's bytes, at most `limit` of them (`open_regular`); anything else is one line naming the path."""
    limit = max_file_bytes() if limit is None else limit
    with open_regular(path, what, limit) as (fd, _):
        chunks, size = [], 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # it grew while being read
                raise ForkliftError(f"{path}: {what} is over the {limit_words(limit)}")
        return b"".join(chunks)


GZIP_SUFFIX = ".gz"
_GZIP = 16 + zlib.MAX_WBITS  # zlib's window bits for a gzip member


def read_gunzipped(path: Path, what: str = "file", limit: int | None = None) -> bytes:
    """A gzip file's decompressed bytes, at most `limit` of them (the file itself too): each step decompresses
    no more than what the limit has left, so a small file that inflates to gigabytes stops at the limit.
    Members written one after another (`cat a.gz b.gz`) read as one stream, as gzip reads them."""
    limit = max_file_bytes() if limit is None else limit
    packed, out, size = read_bounded(path, what, limit), [], 0
    try:
        while packed:
            member = zlib.decompressobj(_GZIP)
            while not member.eof:
                chunk = member.decompress(packed, limit + 1 - size)
                size += len(chunk)
                if size > limit:
                    raise ForkliftError(f"{path}: {what} decompresses to over the {limit_words(limit)}")
                out.append(chunk)
                packed = member.unconsumed_tail
                if not chunk and not packed:  # no input left and nothing more comes out
                    break
            if not member.eof:
                raise ForkliftError(f"{path}: not a readable gzip {what}: it ends inside a member (truncated?)")
            packed = member.unused_data
    except zlib.error as exc:
        raise ForkliftError(f"{path}: not a readable gzip {what}: {exc}") from None
    return b"".join(out)


def limit_words(limit: int) -> str:
    return f"{limit / 1024 / 1024:g} MiB limit ({LIMIT_ENV} raises it)"


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a plain file"


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-')):,} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} overflows to {value}")
    return value


def loads_json(
    text: str | bytes, where: str, what: str = "JSON file", foreign_nan: bool = False, above: int = 0
) -> Any:
    """Strict JSON: no NaN or Infinity, no float that overflows, integers of at most 40 digits, at most 64
    levels deep; anything else is one `ForkliftError` line naming `where`.

    `foreign_nan` reads another tool's NaN / Infinity as numbers (vLLM's own result files hold them).
    `above`: the levels a document read in parts holds above this part (they count toward the 64).
    """
    constant = float if foreign_nan else _no_constant
    number = float if foreign_nan else _finite_float
    check_expansion(text, where, what)
    try:
        value = json.loads(text, parse_constant=constant, parse_int=_bounded_int, parse_float=number)
    except RecursionError:
        raise ForkliftError(f"{where}: not a readable {what}: nested more than {MAX_DEPTH} levels") from None
    except UnicodeDecodeError as exc:
        raise ForkliftError(
            f"{where}: not a readable {what}: not UTF-8 (byte 0x{exc.object[exc.start]:02x} at {exc.start})"
        ) from None
    except ValueError as exc:  # JSONDecodeError is one; so are the hooks' refusals
        raise ForkliftError(f"{where}: not a readable {what}: {exc}") from None
    _check_depth(value, where, what, above)
    return value


def check_expansion(text: str | bytes, where: str, what: str) -> None:
    """Refuse, before parsing, JSON whose objects would take more than PARSED_PER_BYTE times the size limit:
    an upper estimate from CPython's object sizes (an empty dict 64 bytes, a list 56, an element 32)."""
    if len(text) < 1 << 20:
        return
    if isinstance(text, bytes):
        dicts, lists, items, keys = (text.count(mark) for mark in (b"{", b"[", b",", b":"))
    else:  # counted on the text itself: no encoded copy of it
        dicts, lists, items, keys = (text.count(mark) for mark in ("{", "[", ",", ":"))
    estimate = 64 * dicts + 56 * lists + 32 * items + 16 * keys + len(text)
    budget = PARSED_PER_BYTE * max_file_bytes()
    if estimate > budget:
        raise ForkliftError(
            f"{where}: not a readable {what}: its objects would take about {estimate / 2**20:,.0f} MiB once parsed, "
            f"over the {budget / 2**20:,.0f} MiB budget ({LIMIT_ENV} raises it)"
        )


def _check_depth(value: Any, where: str, what: str, above: int = 0) -> None:
    stack = [(value, above + 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                raise ForkliftError(f"{where}: not a readable {what}: nested more than {MAX_DEPTH} levels")
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))


def read_json(path: Path, what: str = "JSON file") -> Any:
    """One JSON file through the bounded reader and the strict parser: the one way forklift reads JSON.
    A file named *.gz is decompressed first, within the same size limit."""
    raw = read_gunzipped(path, what) if path.name.endswith(GZIP_SUFFIX) else read_bounded(path, what)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ForkliftError(
            f"{path}: not a readable {what}: not UTF-8 (byte 0x{raw[exc.start]:02x} at {exc.start})"
        ) from None
    del raw  # the bytes go before the parse: the text and its objects are what the budget counts
    return loads_json(text, str(path), what)


def dumps_json(data: Any, indent: int | None = 2) -> str:
    """Strict JSON out: a NaN or infinite number (an undefined statistic) is written as null, never `NaN`."""
    return json.dumps(_finite(data), indent=indent, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


# What the place, not forklift, refuses: no permission, a read-only file system or file, a full disk or quota,
# a file where a folder must be (mkdir of a path under a file says EEXIST or ENOTDIR).
UNWRITABLE_ERRNOS = frozenset(
    {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.ENOTDIR, errno.EEXIST, errno.ETXTBSY}
)


def unwritable(path: Path, exc: OSError) -> UsageError:
    """An output forklift cannot write (a file where a folder must be, /proc, no permission): one line."""
    return UsageError(f"{path}: cannot write here: {exc.strerror or exc}")


def place_error(exc: OSError) -> UsageError | None:
    """The one line for an OSError that says the place cannot be written (`UNWRITABLE_ERRNOS`, naming the path the
    system named), or None for any other (a bug or a read error, which keeps its own report)."""
    if exc.errno not in UNWRITABLE_ERRNOS or not exc.filename:
        return None
    return unwritable(Path(os.fsdecode(exc.filename)), exc)


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Write under `path` in the block (a file, a folder's files, the cache): a place that refuses it is one
    UsageError line naming the path the system named, or `path`."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in UNWRITABLE_ERRNOS:
            raise
        raise place_error(exc) or unwritable(path, exc) from None


def make_folder(folder: Path) -> Path:
    """`folder` and its parents, or one line naming the output that cannot be made."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise unwritable(folder, exc) from None
    return folder


def write_atomic(path: Path, data: str | bytes, mode: int | None = None, durable: bool = True) -> None:
    """Write via a temp file in the same folder and rename: a reader never sees half a file.

    `durable` syncs the bytes to disk before the rename, so a crash cannot leave the new name on an
    empty file; a memo that checks its own content on read may skip it (one fsync per file is most of
    writing a thousand small ones). Text is written as UTF-8. The file keeps the mode it had, or gets the one a plain open() would
    give (0666 less the umask), unless `mode` says otherwise: mkstemp alone would leave it 0600.
    An output that cannot be written is one UsageError line naming it.
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")  # patches keep non-UTF-8 bytes
    make_folder(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise unwritable(path, exc) from None
    fcntl.flock(fd, fcntl.LOCK_EX)  # held until written: a copy nobody holds is one a killed writer left
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.chmod(tmp, mode if mode is not None else _mode_for(path))
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise unwritable(path, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    sweep_scratch_copies(path)


@contextmanager
def all_or_nothing(paths: Iterable[Path]) -> Iterator[None]:
    """Write several files as one step: on any exception (Ctrl-C included) each of `paths` is put back as
    it was, or removed when it did not exist, so a reader sees every file of the step or none."""
    before = {path: path.read_bytes() if path.is_file() else None for path in paths}
    try:
        yield
    except BaseException:
        for path, data in before.items():
            if data is None:
                path.unlink(missing_ok=True)
            else:
                write_atomic(path, data)
        raise


SCRATCH_GRACE_S = 60.0  # a copy younger than this may be one a writer made but has not locked yet


def sweep_scratch_copies(path: Path) -> list[Path]:
    """Remove the scratch copies of `path` that writers killed mid-write left (`.NAME.*.tmp`, held by nobody)."""
    removed = []
    for copy in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        try:
            fd = os.open(copy, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or time.time() - info.st_mtime < SCRATCH_GRACE_S:
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            copy.unlink(missing_ok=True)
            removed.append(copy)
        except OSError:  # held: a writer is still at work
            continue
        finally:
            os.close(fd)
    return removed


def append_text(path: Path, text: str) -> None:
    """Append to a file others append to as well (a CI job summary): no rename, which would drop their part."""
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(f"{path}: cannot append: {exc.strerror or exc}") from None


def _mode_for(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


class Link(bytes):
    """A symbolic link read from a tree (or made by a patch): its bytes are the link's target."""


class Executable(bytes):
    """A regular file with its executable bit set (git's mode 100755): its bytes are its content."""


class ThroughLink(bytes):
    """A file's content read through a symlinked folder inside the tree (GNU patch follows the
    folder link; git apply refuses a path 'beyond a symbolic link')."""


def tree_reader(root: Path) -> Reader:
    """Read files under `root`: a symlink reads as a `Link` (patch and git apply refuse to patch
    through one); a path that is not a regular file inside the tree reads as absent."""
    base = root.resolve()

    def read(path: str) -> bytes | None:
        place = base / path
        if place.is_symlink():
            return Link(os.readlink(place).encode("utf-8", "surrogateescape"))
        target = place.resolve()
        if base in target.parents and target.is_file() and target.parent != place.parent:
            return ThroughLink(target.read_bytes())
        if base not in target.parents or not target.is_file():
            return None
        content = target.read_bytes()
        return Executable(content) if target.stat().st_mode & stat.S_IXUSR else content

    return read


def utf8_text(raw: bytes, where: Path, name: str, error: type[ForkliftError] = ForkliftError) -> str:
    """`raw` as text; a byte that is not UTF-8 is one `error` line naming `where`, its line and the byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(f"{where}:{line}: not UTF-8 (byte 0x{raw[exc.start]:02x}); save {name} as UTF-8") from None


MAX_WALK_DEPTH = 256  # folders below the top: vLLM's deepest file is 9 down


def walk_files(top: Path, skip: Iterable[str] = (), max_depth: int = MAX_WALK_DEPTH) -> Iterator[Path]:
    """Every file under `top` (symlinks to folders not followed, folders named in `skip` left out), walked with a
    stack rather than recursion: a tree nested past `max_depth` is one line, never a RecursionError."""
    skipped = set(skip)
    stack = [(top, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            raise ForkliftError(f"{folder}: cannot list the folder: {exc.strerror}") from None
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name in skipped:
                    continue
                if depth + 1 > max_depth:
                    raise ForkliftError(f"{top}: folders nested more than {max_depth} deep ({entry.path[:200]!r})")
                stack.append((Path(entry.path), depth + 1))
            elif not entry.is_dir():
                yield Path(entry.path)
