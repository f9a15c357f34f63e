"""File I/O every stage shares: the one atomic writer and the safe tree reader.

Bottom layer: imports nothing from forklift.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from forklift.errors import ForkliftError, UsageError

# A reader of a tree's files by relative path; None means the file is absent.
Reader = Callable[[str], "bytes | None"]


def write_atomic(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """Write via a temp file in the same folder and rename: a reader never sees half a file.

    Text is written as UTF-8. The file keeps the mode it had, or gets the one a plain open() would
    give (0666 less the umask), unless `mode` says otherwise: mkstemp alone would leave it 0600.
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")  # patches keep non-UTF-8 bytes
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode if mode is not None else _mode_for(path))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
        return target.read_bytes()

    return read


def utf8_text(raw: bytes, where: Path, name: str, error: type[ForkliftError] = ForkliftError) -> str:
    """`raw` as text; a byte that is not UTF-8 is one `error` line naming `where`, its line and the byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(f"{where}:{line}: not UTF-8 (byte 0x{raw[exc.start]:02x}); save {name} as UTF-8") from None
