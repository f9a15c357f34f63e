"""Read a tar archive one member at a time, every size bounded before it is read or allocated.

Python's tarfile is not used to read foreign archives: it reads a pax or GNU long-name header whole,
whatever size the header declares (a 600 KiB gzip can hold a 600 MiB pax header), follows a chain of such
headers by recursion, and keeps every member it has read in a list (1.2 M members, all held). Here:

- a pax or long-name header over MAX_HEADER_BYTES, or more than MAX_EXTENDED_HEADERS of them before one
  member, is refused before its data is read;
- members are counted as their headers are read (Limits.max_members), and nothing is kept of a member the
  caller has moved past;
- the data sizes headers declare count against Limits.max_bytes, and every decompressed byte (headers,
  data, padding, skipped data) against the compression ratio, as each header is read, before a byte of
  its data is; no more than a member declares is ever read as its data, and no more than
  MAX_TRAILING_BYTES after the end;
- `sha256` is the digest of the whole uncompressed stream, an OCI layer's diff_id, once the end is read.

The formats read are POSIX ustar and pax, GNU (long names, base-256 sizes) and v7, plain or gzip, bzip2
or xz compressed; sparse files, devices, fifos and unknown types come back as kind "special".
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Literal

from forklift.errors import ForkliftError
from forklift.source.limits import MAX_EXTENDED_HEADERS, MAX_HEADER_BYTES, MAX_TRAILING_BYTES, Limits, UnsafeMember

BLOCK = 512
CHUNK = 1 << 20
Kind = Literal["file", "folder", "symlink", "hardlink", "special"]
_KINDS: dict[bytes, Kind] = {
    b"0": "file",
    b"\0": "file",
    b"7": "file",
    b"1": "hardlink",
    b"2": "symlink",
    b"5": "folder",
}
_EXTENDED = (b"x", b"g", b"L", b"K")  # pax (per member, global), GNU long name, GNU long link name
_GZIP, _BZIP2, _XZ, _ZSTD = b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd"


@dataclass(frozen=True)
class Member:
    name: str  # as the archive names it, a pax path or GNU long name applied (not yet cleaned)
    kind: Kind
    size: int  # bytes of data (a file's; 0 for the rest)
    mode: int
    linkname: str


class TarStream:
    """The members of the tar in `raw` (compressed or not), read forward once.

    Iterate for the members; `read(n)` reads the current member's data (what is left unread is skipped
    when the next member is asked for). `packed` is the size of `raw`, for the compression ratio.
    """

    def __init__(self, raw: BinaryIO, label: str, limits: Limits, packed: int) -> None:
        self.label, self.limits, self.packed = label, limits, max(packed, 1)
        self.source = _decompressed(raw, label)
        self.digest = hashlib.sha256()
        self.total = 0  # decompressed bytes read so far: headers, data, padding
        self.declared = 0  # data bytes the headers so far declare
        self.members = 0
        self.left = 0  # data bytes of the current member not yet read
        self.padding = 0
        self.current = ""

    def __iter__(self) -> Iterator[Member]:
        globals_: dict[str, str] = {}
        while True:
            self._skip(self.left + self.padding)
            self.left = self.padding = 0
            member = self._next(globals_)
            if member is None:
                break
            yield member
        self._skip_rest()

    def read(self, size: int) -> bytes:
        """At most `size` bytes (at least 1) of the current member's data; b"" at its end."""
        data = self._read(min(size, self.left))
        self.left -= len(data)
        return data

    @property
    def sha256(self) -> str:
        """The hex digest of the whole uncompressed stream (valid once iteration has ended)."""
        return self.digest.hexdigest()

    def _next(self, globals_: dict[str, str]) -> Member | None:
        pax: dict[str, str] = {}
        extended = 0
        while True:
            block = self._read(BLOCK)
            if not block and self.total == 0:
                raise ForkliftError(f"cannot read {self.label}: not a tar archive (empty)")
            if not block or block == bytes(BLOCK):
                return None  # the end: a zero block, or the stream ending on a header boundary
            if len(block) < BLOCK:
                what = "not a tar archive" if self.members == 0 else "it ends inside a header (truncated)"
                raise ForkliftError(f"cannot read {self.label}: {what}")
            _checksum(block, self.label, self.members)
            typeflag = block[156:157]
            size = _number(block[124:136], self.label)
            name = _header_name(block)
            if typeflag not in _EXTENDED:
                break
            extended += 1
            if extended > MAX_EXTENDED_HEADERS:
                raise UnsafeMember(
                    f"unsafe {self.label}: over {MAX_EXTENDED_HEADERS} extended headers before one member"
                )
            if size > MAX_HEADER_BYTES:
                raise UnsafeMember(
                    f"unsafe {self.label}: an extended header (type {typeflag.decode('latin-1')!r}) of {size} bytes"
                    f" (at most {MAX_HEADER_BYTES})"
                )
            data = self._data(size)
            if typeflag == b"L":
                pax["path"] = _text(data.split(b"\0", 1)[0])
            elif typeflag == b"K":
                pax["linkpath"] = _text(data.split(b"\0", 1)[0])
            elif typeflag == b"x":
                pax.update(_pax_records(data, self.label))
            else:
                globals_.update(_pax_records(data, self.label))
                if sum(len(k) + len(v) for k, v in globals_.items()) > MAX_HEADER_BYTES:
                    raise UnsafeMember(f"unsafe {self.label}: global pax headers past {MAX_HEADER_BYTES} bytes")
        fields = {**globals_, **pax}
        if "size" in fields:
            if not fields["size"].isdigit():
                raise ForkliftError(f"cannot read {self.label}: a pax size {fields['size'][:40]!r} is not a number")
            size = int(fields["size"])
        if "path" in fields:
            name = fields["path"].rstrip("/") or fields["path"]  # as tarfile reads a pax path
        kind = _KINDS.get(typeflag, "special")
        if kind == "file" and typeflag == b"\0" and name.endswith("/"):
            kind = "folder"  # a v7 tar marks folders by the slash alone
        if any(key.startswith("GNU.sparse.") for key in fields):
            kind = "special"
        self.members += 1
        self.limits.check_members(self.members, self.label)
        data_size = size if kind in ("file", "special") else 0  # only these carry data (POSIX, and tarfile)
        self.declared += data_size
        self.limits.check_bytes(self.declared, self.label, name)
        self.limits.check_ratio(self.total + data_size, self.packed, self.label, name)
        self.left, self.padding = data_size, -data_size % BLOCK
        self.current = name
        linkname = fields.get("linkpath") or _text(block[157:257].split(b"\0", 1)[0])
        mode = _number(block[100:108], self.label) & 0o7777
        return Member(name, kind, data_size if kind == "file" else 0, mode, linkname)

    def _data(self, size: int) -> bytes:
        """An extended header's data (bounded by the caller), its padding skipped."""
        data = self._read(size)
        if len(data) < size:
            raise ForkliftError(f"cannot read {self.label}: it ends inside an extended header (truncated)")
        self._skip(-size % BLOCK)
        return data

    def _read(self, size: int) -> bytes:
        if size <= 0:
            return b""
        try:
            data = self.source.read(size)
        except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
            raise ForkliftError(f"cannot read {self.label}: {' '.join(str(exc).split())}") from None
        self.total += len(data)
        self.limits.check_ratio(self.total, self.packed, self.label, self.current)
        self.digest.update(data)
        return data

    def _skip(self, size: int) -> None:
        while size > 0:
            chunk = self._read(min(size, CHUNK))
            if not chunk:
                raise ForkliftError(f"cannot read {self.label}: it ends inside member {self.current!r} (truncated)")
            size -= len(chunk)

    def _skip_rest(self) -> None:
        """The padding after the end (a tar is padded to its record size): part of the stream's digest."""
        end = self.total
        while self._read(CHUNK):
            if self.total - end > MAX_TRAILING_BYTES:
                raise UnsafeMember(f"unsafe {self.label}: over {MAX_TRAILING_BYTES} bytes after the end of the archive")


def _decompressed(raw: BinaryIO, label: str) -> BinaryIO:
    head = raw.read(6)
    raw.seek(0)
    if head.startswith(_GZIP):
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if head.startswith(_BZIP2):
        return bz2.BZ2File(raw)  # type: ignore[return-value]
    if head.startswith(_XZ):
        return lzma.LZMAFile(raw)  # type: ignore[return-value]
    if head.startswith(_ZSTD):
        raise ForkliftError(f"cannot read {label}: zstd compression; forklift reads plain, gzip, bzip2 and xz tars")
    return raw


def _checksum(block: bytes, label: str, index: int) -> None:
    try:
        stored = _number(block[148:156], label)
    except ForkliftError:
        stored = -1
    unsigned = sum(block[:148]) + 256 + sum(block[156:])
    signed = unsigned - sum(2 * b for b in block[:148] + block[156:] if b > 127)
    if stored not in (unsigned, signed):
        what = "not a tar archive" if index == 0 else f"a bad header checksum after member {index}"
        raise ForkliftError(f"cannot read {label}: {what}")


def _number(field: bytes, label: str) -> int:
    """An octal field, or GNU's base-256 form (the high bit of the first byte set)."""
    if field[:1] and field[0] & 0x80:
        if field[0] == 0xFF:
            raise ForkliftError(f"cannot read {label}: a negative number in a header")
        return int.from_bytes(bytes([field[0] & 0x7F]) + field[1:], "big")
    text = field.split(b"\0", 1)[0].strip(b" ")
    try:
        return int(text, 8) if text else 0
    except ValueError:
        raise ForkliftError(f"cannot read {label}: a header field {text[:16]!r} is not a number") from None


def _header_name(block: bytes) -> str:
    name = block[:100].split(b"\0", 1)[0]
    if block[257:263] == b"ustar\0" and (prefix := block[345:500].split(b"\0", 1)[0]):
        name = prefix + b"/" + name  # POSIX ustar splits a long path; GNU's magic uses this field for times
    return _text(name)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _pax_records(data: bytes, label: str) -> dict[str, str]:
    """`LENGTH KEY=VALUE\\n` records, read in a loop (the header's size is already bounded)."""
    records: dict[str, str] = {}
    pos = 0
    while pos < len(data) and data[pos] != 0:
        space = data.find(b" ", pos, pos + 20)
        length = int(data[pos:space]) if space > pos and data[pos:space].isdigit() else 0
        end = pos + length
        if length <= space - pos or end > len(data) or data[end - 1 : end] != b"\n" or b"=" not in data[space:end]:
            raise ForkliftError(f"cannot read {label}: a malformed pax record at byte {pos} of its header")
        key, _, value = data[space + 1 : end - 1].partition(b"=")
        records[_text(key)] = _text(value)
        pos = end
    return records
