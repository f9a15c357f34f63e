"""The names a shipped artifact carries: the local version of a patched wheel and the labels of its image.

One definition each, used where they are written (`forklift wheel`, `forklift image --print`) and where
they are checked (`forklift verify --image`).
"""

from __future__ import annotations

import hashlib

from packaging.version import InvalidVersion, Version

from forklift.config.schema import GitPin, PathPin, PypiPin
from forklift.errors import ForkliftError
from forklift.series.model import Series

VERSION = "org.opencontainers.image.version"
REVISION = "org.opencontainers.image.revision"
OVERLAY = "io.forklift.overlay"
PIN = "io.forklift.pin"
SERIES = "io.forklift.series"
LOCAL_PREFIX = "forklift."


def local_version(version: str, overlay_hash: str) -> str:
    """`0.32.0` -> `0.32.0+forklift.e6745a56` (PEP 440 local label; an upstream `+cpu` is kept before it)."""
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise ForkliftError(f"the wheel's version {version!r} is not a PEP 440 version") from None
    label = LOCAL_PREFIX + overlay_hash.removeprefix("sha256:")[:8]
    return f"{parsed}{'.' if parsed.local else '+'}{label}"


def series_digest(series: Series) -> str:
    """sha256 of the applied patches as `sha256sum` lists them (`DIGEST  NAME`, series order)."""
    lines = "".join(f"{series.digests.get(p.name, '')}  {p.name}\n" for p in series.patches)
    return "sha256:" + hashlib.sha256(lines.encode("utf-8", "surrogateescape")).hexdigest()


def pin_label(pin: PypiPin | GitPin | PathPin) -> str:
    """The pin in one line: what it names and the hash or commit that binds it."""
    if isinstance(pin, PypiPin):
        return f"pypi:{pin.package}=={pin.version}:{pin.filename or 'sdist'}@sha256:{pin.sha256}"
    if isinstance(pin, GitPin):
        return f"git:{pin.url}@{pin.tag}:{pin.commit}"
    return f"path:{pin.path}@sha256:{pin.sha256}"


def revision(pin: PypiPin | GitPin | PathPin) -> str | None:
    """The upstream commit, when the pin names one."""
    return pin.commit if isinstance(pin, GitPin) else None


def image_labels(pin: PypiPin | GitPin | PathPin, version: str, overlay_hash: str, series: Series) -> dict[str, str]:
    """The OCI labels of an image holding the patched engine at `version`."""
    labels = {VERSION: version}
    if (commit := revision(pin)) is not None:
        labels[REVISION] = commit
    labels |= {OVERLAY: overlay_hash, PIN: pin_label(pin), SERIES: series_digest(series)}
    return labels
