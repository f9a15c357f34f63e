"""A PyPI pin names one release: its file name and the file's own metadata must say the pin's package and version.

The cache is addressed by sha256, so a pin whose name or version is wrong but whose sha256 is that of a cached
file would otherwise check that other release and record the pin's words beside its bytes. Both proofs here
hold whether or not anything is cached: the file name is read from the pin alone, and the metadata from the
tree, every time the pin is used (one small read).
"""

from __future__ import annotations

import email.parser
from pathlib import Path

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from forklift.config.schema import PypiPin
from forklift.errors import ForkliftError, UsageError
from forklift.fsio import read_bounded

MAX_METADATA_BYTES = 4 << 20  # vLLM's PKG-INFO is ~20 KB, its README included


def same_release(pin: PypiPin, name: str, version: str) -> bool:
    """Whether `name` `version` is the pin's package and version (names canonicalized, versions by PEP 440)."""
    return canonicalize_name(name) == canonicalize_name(pin.package) and _version(version) == _version(pin.version)


def refuse_misnamed_file(pin: PypiPin) -> None:
    """A pinned file name that names another package or version: one line, before any cache is looked at."""
    if pin.filename is None:
        return
    try:
        if pin.filename.endswith(".whl"):
            name, version, *_ = parse_wheel_filename(pin.filename)
        else:
            name, version = parse_sdist_filename(pin.filename)
    except (InvalidSdistFilename, InvalidWheelFilename):
        raise UsageError(
            f"upstream.filename {pin.filename!r} is not an sdist or wheel file name"
            " (NAME-VERSION.tar.gz, NAME-VERSION-PY-ABI-PLATFORM.whl)"
        ) from None
    if not same_release(pin, name, str(version)):
        raise UsageError(
            f"upstream.filename {pin.filename!r} is {name} {version}, but the pin names"
            f" {_printable(pin.package)} {_printable(pin.version)}; fix upstream.package/version or the file and its sha256"
        )


def prove_tree_identity(tree: Path, pin: PypiPin, wheel: bool, label: str) -> None:
    """The extracted file's own metadata (an sdist's PKG-INFO, a wheel's *.dist-info/METADATA) names the
    pin's package and version, or one line saying which release the pinned sha256 really is."""
    if wheel:
        found = sorted(tree.glob("*.dist-info/METADATA"))
        metadata = found[0] if len(found) == 1 else None
    else:
        metadata = tree / "PKG-INFO"
    if metadata is None or not metadata.exists():
        what = "single *.dist-info/METADATA" if wheel else "PKG-INFO"
        raise ForkliftError(f"{label}: the pinned file has no {what}, so nothing proves it is the pinned release")
    if metadata.is_symlink():  # its words would be another file's
        raise ForkliftError(f"{label}: its {metadata.name} is a symlink; refusing to take it as the release's metadata")
    raw = read_bounded(metadata, "package metadata", MAX_METADATA_BYTES)
    header = email.parser.BytesParser().parsebytes(raw, headersonly=True)  # a description's lines are never read
    name, version = header.get("Name"), header.get("Version")
    if name is None or version is None:
        raise ForkliftError(f"{label}: {metadata.name} names no Name and Version, so nothing proves the release")
    if not same_release(pin, name, version):
        raise ForkliftError(
            f"{label}: the file with sha256 {pin.sha256[:12]}… is {_printable(name)} {_printable(version)}"
            f" (its {metadata.name}), not {_printable(pin.package)} {_printable(pin.version)}; fix upstream.package/version or upstream.sha256"
        )


def _version(text: str) -> Version | str:
    try:
        return Version(text)
    except InvalidVersion:
        return text


def _printable(text: str) -> str:
    return text if text.isprintable() else repr(text)
