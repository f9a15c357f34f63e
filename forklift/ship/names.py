"""The grammars a name must match before forklift writes it into a file another tool reads.

A Containerfile line is code: a newline in `[image] base` starts a line of its own, a `;` in a wheel file name
ends a shell command, a `$` is expanded by the builder. So a value goes into the Containerfile (or names the
wheel `forklift wheel` writes) only after it matched the grammar its kind is defined by: an image reference
by the OCI distribution grammar, a package name by PEP 503/508, a version by PEP 440, a wheel file name by
the wheel file name convention (PEP 427 / PEP 491). Anything else is one line naming the field.
"""

from __future__ import annotations

import re

from packaging.version import VERSION_PATTERN

from forklift.errors import ConfigError

# github.com/distribution/reference (regexp.go): [domain/]path[:tag][@digest], the name at most 255 characters.
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
IMAGE_REFERENCE = re.compile(rf"(?P<name>{_NAME})(?::{_TAG})?(?:@{_DIGEST})?", re.ASCII)
MAX_IMAGE_NAME = 255

# PEP 508 names (what PEP 503 normalizes); a version is PEP 440's own pattern, with no surrounding space.
PACKAGE_NAME = re.compile(r"[A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9]", re.IGNORECASE | re.ASCII)
VERSION = re.compile(VERSION_PATTERN, re.VERBOSE | re.IGNORECASE | re.ASCII)
# NAME-VERSION(-BUILD)?-PYTHON-ABI-PLATFORM.whl, each part free of '-' (the convention escapes it to '_').
_TAGS = r"[A-Za-z0-9_.]+"
WHEEL_FILENAME = re.compile(
    rf"(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._]*[A-Za-z0-9])?)-(?P<version>[A-Za-z0-9_.!+]+)"
    rf"(?:-(?P<build>[0-9][A-Za-z0-9_.]*))?-(?P<python>{_TAGS})-(?P<abi>{_TAGS})-(?P<platform>{_TAGS})\.whl",
    re.ASCII,
)
MAX_NAME = 255  # a file name on every file system forklift writes to


def _refuse(field: str, value: str, what: str, where: str) -> ConfigError:
    return ConfigError(f"{where}: {field} = {value[:200]!r}: {what}")


def image_reference(value: str, field: str, where: str) -> str:
    """An image reference (`registry:5000/org/name:tag@sha256:...`), as a container builder's FROM reads it."""
    match = IMAGE_REFERENCE.fullmatch(value)
    if match is None or len(match.group("name")) > MAX_IMAGE_NAME:
        raise _refuse(field, value, "not an image reference ([registry/]name[:tag][@digest], lowercase name)", where)
    return value


def package_name(value: str, field: str, where: str) -> str:
    if PACKAGE_NAME.fullmatch(value) is None:
        raise _refuse(field, value, "not a package name (letters, digits, '.', '_', '-'; PEP 508)", where)
    return value


def version(value: str, field: str, where: str) -> str:
    if VERSION.fullmatch(value) is None:
        raise _refuse(field, value, "not a PEP 440 version", where)
    return value


def wheel_filename(value: str, field: str, where: str) -> str:
    """A wheel's file name: one plain file name (no folder), its version PEP 440."""
    match = WHEEL_FILENAME.fullmatch(value)
    if match is None or len(value) > MAX_NAME or VERSION.fullmatch(match.group("version")) is None:
        raise _refuse(field, value, "not a wheel file name (NAME-VERSION[-BUILD]-PYTHON-ABI-PLATFORM.whl)", where)
    return value
