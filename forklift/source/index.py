"""Find one file of a release on a PEP 691 JSON simple index (PyPI or a mirror).

The index is ``PIP_INDEX_URL`` when set (so forklift follows the same mirror as pip), else
https://pypi.org/simple. Only the JSON form of the simple API is spoken: it carries each
file's sha256 and size, which the download is checked against.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urldefrag, urljoin

from packaging.tags import Tag, sys_tags
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from forklift.errors import ForkliftError, UnreachableError, UsageError

DEFAULT_INDEX = "https://pypi.org/simple"
PEP691_JSON = "application/vnd.pypi.simple.v1+json"
TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    sha256: str | None
    size: int | None


def default_index_url() -> str:
    return os.environ.get("PIP_INDEX_URL") or DEFAULT_INDEX


def redact(url: str) -> str:
    """The URL without any user:password, so an error line never prints credentials."""
    return re.sub(r"^([a-z][a-z0-9+.-]*://)[^/]*@", r"\1***@", url, flags=re.IGNORECASE)


def http_client():
    """An httpx client with forklift's timeouts; imported lazily: the warm cache path needs no HTTP."""
    import httpx

    from forklift import __version__

    return httpx.Client(
        timeout=httpx.Timeout(TIMEOUT_SECONDS, connect=10.0),
        follow_redirects=True,
        headers={"User-Agent": f"forklift/{__version__}"},
    )


def reason(exc: BaseException) -> str:
    """One line saying why a request failed."""
    return " ".join(str(exc).split()) or type(exc).__name__


def resolve_pypi_file(
    package: str,
    version: str,
    filename: str | None = None,
    index_url: str | None = None,
    *,
    wheel: bool = False,
    tags: frozenset[Tag] | None = None,
) -> IndexFile:
    """The file of `package` `version` on the index: `filename` when given, else the sdist,
    else (``wheel=True``) the wheel with exactly `tags`, or without them the one that best fits this machine."""
    index = index_url or default_index_url()
    if not re.match(r"^https?://[^/\s]+", index):
        source = "" if index_url else " (from PIP_INDEX_URL)"
        raise UsageError(f"index URL {redact(index)}{source}: expected an http(s) PEP 691 simple index URL")
    page = f"{index.rstrip('/')}/{canonicalize_name(package)}/"
    return pick_file(fetch_project_page(page, package), page, package, version, filename, wheel=wheel, tags=tags)


def fetch_project_page(page: str, package: str) -> dict:
    import httpx

    try:
        with http_client() as client:
            response = client.get(page, headers={"Accept": PEP691_JSON})
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise UnreachableError(f"cannot reach the index {redact(page)}: {reason(exc)}") from None
    if response.status_code == 404:
        raise ForkliftError(f"package {package!r} is not on the index {redact(page)}")
    if response.status_code != 200:
        raise ForkliftError(f"the index {redact(page)} answered HTTP {response.status_code}")
    kind = response.headers.get("content-type", "").split(";")[0].strip()
    try:
        if kind != PEP691_JSON:
            raise ValueError(kind or "no content-type")
        return response.json()
    except ValueError as exc:
        raise ForkliftError(f"the index {redact(page)} did not answer with PEP 691 JSON ({reason(exc)})") from None


def pick_file(
    data: dict,
    page: str,
    package: str,
    version: str,
    filename: str | None = None,
    *,
    wheel: bool = False,
    tags: frozenset[Tag] | None = None,
) -> IndexFile:
    """Choose the file from a parsed PEP 691 project page (pure)."""
    files = [f for f in data.get("files", []) if _same_version(_version_of(f.get("filename", ""), package), version)]
    where = f"{package} {version} on the index {redact(page)}"
    if not files:
        raise ForkliftError(f"{package} {version} is not on the index {redact(page)}{_latest(data)}")
    if filename:
        chosen = [f for f in files if f["filename"] == filename]
        if not chosen:
            raise ForkliftError(f"{where} has no file {filename!r} (files: {_names(files)})")
        return _index_file(chosen[0], page)
    if wheel:
        return _index_file(_best_wheel(files, where) if tags is None else _tagged_wheel(files, where, tags), page)
    sdists = sorted(
        (f for f in files if not f["filename"].endswith(".whl")), key=lambda f: not f["filename"].endswith(".tar.gz")
    )
    if not sdists:
        raise ForkliftError(f"{where} has no sdist (files: {_names(files)}); pin a wheel instead")
    return _index_file(sdists[0], page)


def _best_wheel(files: list[dict], where: str) -> dict:
    rank = {tag: i for i, tag in enumerate(sys_tags())}
    best: tuple[int, dict] | None = None
    for f in files:
        if not f["filename"].endswith(".whl"):
            continue
        tags = parse_wheel_filename(f["filename"])[3]
        fits = [rank[t] for t in tags if t in rank]
        if fits and (best is None or min(fits) < best[0]):
            best = (min(fits), f)
    if best is None:
        raise ForkliftError(f"{where} has no wheel for this machine (files: {_names(files)})")
    return best[1]


def _tagged_wheel(files: list[dict], where: str, tags: frozenset[Tag]) -> dict:
    """The wheel built for exactly `tags` (a pin's platform, whatever machine asks)."""
    for f in files:
        if f["filename"].endswith(".whl") and parse_wheel_filename(f["filename"])[3] == tags:
            return f
    shown = ".".join(sorted(str(tag) for tag in tags))
    raise ForkliftError(f"{where} has no wheel tagged {shown} (files: {_names(files)})")


def _index_file(entry: dict, page: str) -> IndexFile:
    url = urldefrag(urljoin(page, entry["url"])).url
    return IndexFile(entry["filename"], url, entry.get("hashes", {}).get("sha256"), entry.get("size"))


def _version_of(filename: str, package: str) -> Version | None:
    try:
        if filename.endswith(".whl"):
            name, version, *_ = parse_wheel_filename(filename)
        else:
            name, version = parse_sdist_filename(filename)
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    return version if canonicalize_name(name) == canonicalize_name(package) else None


def _same_version(found: Version | None, wanted: str) -> bool:
    if found is None:
        return False
    try:
        return found == Version(wanted)
    except InvalidVersion:
        return False


def _names(files: list[dict]) -> str:
    names = [f["filename"] for f in files]
    return ", ".join(names[:6]) + (f", ... ({len(names)} in all)" if len(names) > 6 else "")


def _latest(data: dict) -> str:
    versions = []
    for text in data.get("versions") or []:
        try:
            versions.append((Version(text), text))
        except InvalidVersion:
            continue
    return f" (latest: {', '.join(text for _, text in sorted(versions)[-3:])})" if versions else ""
