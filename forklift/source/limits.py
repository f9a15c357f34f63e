"""Every bound forklift holds an archive to, in one place, with why (docs/security.md lists them).

An archive (an sdist, a wheel, a local tarball, an image archive and each of its layers) is read from
elsewhere: each number here is checked before the bytes it bounds are read or allocated. The first
three can be raised per pin (`[upstream.extract]`) or by environment variable, named in the error.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import ClassVar

from forklift.errors import ForkliftError
from forklift.fsio import env_number

NAME_MAX = 255  # one path component, as the kernel allows
PATH_MAX = 4096  # a whole path, as the kernel allows; a member's name may use half (the rest is the destination)
MAX_DEPTH = 256  # path components: vLLM's deepest file is 9 down, a whole serving image's under 40
MAX_SYMLINK_HOPS = 40  # what the kernel follows before ELOOP
MAX_HEADER_BYTES = (
    1 << 20
)  # one pax or GNU long-name header: a path is 4 KiB, xattrs a few KiB; Python's tarfile reads any size whole
MAX_EXTENDED_HEADERS = 16  # pax / long-name headers before one member (tar writes at most 3)
MAX_TRAILING_BYTES = 1 << 20  # zeros after a tar's end marker: writers pad to a 10 KiB record
# One image layer's declared data: read and skipped, never held or written (only the engine's files are, within
# Limits.max_bytes), so this bounds time only; a CUDA serving image has layers of 5-10 GiB.
MAX_LAYER_BYTES = 64 << 30
RATIO_FLOOR = 1 << 20  # the ratio is judged past this many bytes: a tiny archive is mostly headers and padding


class UnsafeMember(ForkliftError):
    pass


@dataclass(frozen=True)
class Limits:
    """How much one archive may expand to; each has an environment override (named in the error)."""

    max_bytes: int = 2 << 30  # a few times the largest vLLM sdist tree
    max_members: int = 200_000  # the vLLM sdist has 7,729; a whole serving image layer tens of thousands
    max_ratio: float = 200.0  # uncompressed / compressed; source code compresses ~5-10x

    ENV: ClassVar[dict[str, str]] = {
        "max_bytes": "FORKLIFT_EXTRACT_MAX_BYTES",
        "max_members": "FORKLIFT_EXTRACT_MAX_MEMBERS",
        "max_ratio": "FORKLIFT_EXTRACT_MAX_RATIO",
    }

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, configured: object = None) -> Limits:
        """The defaults, then the values `configured` sets (forklift.toml's `[upstream.extract]`), then any
        FORKLIFT_EXTRACT_MAX_* variable (a bad value is one line)."""
        environ = dict(os.environ if environ is None else environ)
        values: dict[str, float | int] = {}
        for field in cls.ENV:
            if (value := getattr(configured, field, None)) is not None:
                values[field] = value
        for field, var in cls.ENV.items():
            if (given := env_number(var, whole=field != "max_ratio", environ=environ)) is not None:
                values[field] = given
        return cls(**values)  # type: ignore[arg-type]

    def for_layers(self) -> Limits:
        """These limits for reading an image layer: its declared data up to MAX_LAYER_BYTES at least."""
        return dataclasses.replace(self, max_bytes=max(self.max_bytes, MAX_LAYER_BYTES))

    def check_bytes(self, total: int, label: str, member: str) -> None:
        if total > self.max_bytes:
            raise UnsafeMember(
                f"unsafe {label}: expands past {size_text(self.max_bytes)} at member {member!r} ({raise_hint('max_bytes')})"
            )

    def check_ratio(self, total: int, packed: int, label: str, member: str) -> None:
        if total > RATIO_FLOOR and total / max(packed, 1) > self.max_ratio:
            raise UnsafeMember(
                f"unsafe {label}: expands more than {self.max_ratio:g} times its {packed} bytes"
                f" by member {member!r} (a decompression bomb? {raise_hint('max_ratio')})"
            )

    def check_members(self, count: int, label: str) -> None:
        if count > self.max_members:
            raise UnsafeMember(f"unsafe {label}: more than {self.max_members} members ({raise_hint('max_members')})")


def clean_member(name: str, label: str, member: str | None = None) -> str:
    """`name` as a relative POSIX path without ``.`` parts; absolute, ``..``, over-long or too deep paths are refused."""
    member = member or name
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise UnsafeMember(f"unsafe {label}: member {member!r} has an absolute path")
    if "\0" in name:
        raise UnsafeMember(f"unsafe {label}: member {member!r} has a NUL byte in its name")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeMember(f"unsafe {label}: member {member!r} climbs out with '..'")
    cleaned = "/".join(parts)
    if len(os.fsencode(cleaned)) >= PATH_MAX // 2 or any(len(os.fsencode(p)) > NAME_MAX for p in parts):
        raise UnsafeMember(f"unsafe {label}: member {member[:80]!r}... has an over-long name ({len(cleaned)} chars)")
    if len(parts) > MAX_DEPTH:
        raise UnsafeMember(f"unsafe {label}: member {member[:80]!r}... is {len(parts)} folders deep (over {MAX_DEPTH})")
    return cleaned


def raise_hint(field: str) -> str:
    return f"raise upstream.extract.{field} in forklift.toml or {Limits.ENV[field]}"


def size_text(count: int) -> str:
    return f"{count / (1 << 30):.1f} GiB" if count >= 1 << 30 else f"{count} bytes"
