"""A zip writer for rebuilt wheels: unchanged members are copied as their compressed bytes.

zipfile can only write a member by compressing it again, which for a vLLM wheel (480 MB of mostly
native code) takes twenty seconds to change a few Python files; copying the deflated bytes as they are
takes one. What is written is the plain zip format pip and every installer read: a local header and
data per member, then the central directory. ZIP64 is not written (a wheel past 4 GiB is refused).
"""

from __future__ import annotations

import shutil
import struct
import zlib
from dataclasses import dataclass
from typing import BinaryIO
from zipfile import ZIP_DEFLATED, ZIP_STORED, ZipInfo

from forklift.errors import ForkliftError

_LOCAL = struct.Struct("<4s2B4HL2L2H")  # APPNOTE 4.3.7 local file header
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")  # 4.3.12 central directory header
_END = struct.Struct("<4s4H2LH")  # 4.3.16 end of central directory record
_ZIP32 = 0xFFFFFFFF
_UTF8_NAME = 0x800
_VERSION = 20  # 2.0: deflate
_UNIX = 3
DEFAULT_TIME = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class _Entry:
    name: bytes
    flags: int
    method: int
    time: int
    date: int
    crc: int
    packed: int
    size: int
    attributes: int
    offset: int


class ZipWriter:
    """Members appended in order to `out`; `close()` writes the central directory."""

    def __init__(self, out: BinaryIO, where: str) -> None:
        self.out, self.where = out, where
        self.entries: list[_Entry] = []

    def copy(self, source: BinaryIO, info: ZipInfo, name: str) -> None:
        """Member `info` of the zip open as `source`, its compressed bytes copied unchanged, stored as `name`."""
        if info.flag_bits & 0x1:
            raise ForkliftError(f"{self.where}: member {info.filename!r} is encrypted; cannot carry it")
        if info.compress_type not in (ZIP_STORED, ZIP_DEFLATED):
            raise ForkliftError(f"{self.where}: member {info.filename!r} uses zip method {info.compress_type}")
        source.seek(info.header_offset)
        head = source.read(_LOCAL.size)
        if len(head) != _LOCAL.size or head[:4] != b"PK\x03\x04":
            raise ForkliftError(f"{self.where}: member {info.filename!r} has no local header where the index says")
        name_length, extra_length = struct.unpack("<2H", head[26:30])
        source.seek(info.header_offset + _LOCAL.size + name_length + extra_length)
        sizes = (info.CRC, info.compress_size, info.file_size)
        self._header(name, info.compress_type, info.date_time, *sizes, info.external_attr)
        shutil.copyfileobj(_Bounded(source, info.compress_size), self.out)

    def add(self, name: str, data: bytes, date_time: tuple[int, ...] = DEFAULT_TIME, mode: int = 0o644) -> None:
        """A new member: `data` deflated."""
        packer = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
        packed = packer.compress(data) + packer.flush()
        self._header(name, ZIP_DEFLATED, date_time, zlib.crc32(data), len(packed), len(data), (0o100000 | mode) << 16)
        self.out.write(packed)

    def close(self) -> None:
        start = self.out.tell()
        for e in self.entries:
            fields = (b"PK\x01\x02", _VERSION, _UNIX, _VERSION, 0, e.flags, e.method, e.time, e.date)
            sizes = (e.crc, e.packed, e.size, len(e.name), 0, 0, 0, 0, e.attributes, e.offset)
            self.out.write(_CENTRAL.pack(*fields, *sizes) + e.name)
        length = self.out.tell() - start
        if len(self.entries) > 0xFFFF or self.out.tell() > _ZIP32:
            raise ForkliftError(f"{self.where}: too large for a zip without ZIP64 ({len(self.entries)} members)")
        count = len(self.entries)
        self.out.write(_END.pack(b"PK\x05\x06", 0, 0, count, count, length, start, 0))

    def _header(
        self, name: str, method: int, date_time: tuple[int, ...], crc: int, packed: int, size: int, attributes: int
    ) -> None:
        offset = self.out.tell()
        if max(offset, packed, size) >= _ZIP32:
            raise ForkliftError(f"{self.where}: {name!r} is past 4 GiB; a zip without ZIP64 cannot hold it")
        raw = name.encode("utf-8")
        flags = 0 if raw.isascii() else _UTF8_NAME
        year, month, day, hour, minute, second = date_time[:6]
        time = hour << 11 | minute << 5 | second // 2
        date = (max(year, 1980) - 1980) << 9 | month << 5 | day
        fields = (b"PK\x03\x04", _VERSION, 0, flags, method, time, date, crc, packed, size, len(raw), 0)
        self.out.write(_LOCAL.pack(*fields) + raw)
        self.entries.append(_Entry(raw, flags, method, time, date, crc, packed, size, attributes, offset))


class _Bounded:
    """The next `left` bytes of a file, for copyfileobj."""

    def __init__(self, source: BinaryIO, left: int) -> None:
        self.source, self.left = source, left

    def read(self, size: int = -1) -> bytes:
        size = self.left if size < 0 else min(size, self.left)
        chunk = self.source.read(size)
        self.left -= len(chunk)
        return chunk
