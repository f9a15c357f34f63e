"""Find one file of a release on a PEP 691 JSON simple index (PyPI or a mirror).

The index is the one pip would use: ``PIP_INDEX_URL``, then ``index-url`` in pip's configuration files
(``pip config``), then pip's own default, so a user behind a mirror needs nothing more. Only the JSON form of the simple API is spoken: it carries each
file's sha256 and size, which the download is checked against.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
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
from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, ValidationError

from forklift import __version__
from forklift.errors import ForkliftError, UnreachableError, UsageError
from forklift.fsio import env_number, write_atomic
from forklift.source.hashing import RACY_NS

if TYPE_CHECKING:
    import httpx

PEP691_JSON = "application/vnd.pypi.simple.v1+json"
TIMEOUT_SECONDS = 30.0
MAX_PAGE_BYTES = 64 << 20  # vLLM's project page is a few MB; more is not an index answering


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    sha256: str | None
    size: int | None


# Where pip reads index-url from, strongest first: its environment variable, then the sections of its
# configuration files a download or install command consults.
_PIP_INDEX_KEYS = (":env:.index-url", "download.index-url", "install.index-url", "global.index-url")


def pip_index_url() -> tuple[str, str]:
    """(index URL, where it came from): PIP_INDEX_URL, a pip configuration file, or pip's default.

    pip's own reader is slow to import (~200 ms), so its answer is remembered in the cache with the
    stat of every file it consulted, as the folder pin's listing is (source.hashing): a memo is used
    only while the environment that picks those files and each file's stat are unchanged."""
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"], "PIP_INDEX_URL"
    from forklift.source.cache import default_cache

    memo = default_cache().root / "pip-index.json"
    key = _pip_environment()
    try:
        saved = json.loads(memo.read_bytes())
        if saved["key"] == key and all(_stat_key(path) == found for path, found in saved["files"].items()):
            return str(saved["url"]), str(saved["where"])
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no memo, or a damaged one: ask pip
    (url, where), files = _pip_configured()
    stats = {path: _stat_key(path) for path in files}
    racy = time.time_ns() - RACY_NS
    if all(found is None or found[1] < racy for found in stats.values()):  # a file edited just now: ask again
        write_atomic(memo, json.dumps({"key": key, "files": stats, "url": url, "where": where}))
    return url, where


def _pip_environment() -> dict[str, Any]:
    """What decides which configuration files pip reads: its variables, the home and XDG folders, the
    interpreter's prefix, and pip's own install."""
    names = ("HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "VIRTUAL_ENV")
    spec = importlib.util.find_spec("pip")
    origin = spec.origin if spec is not None else None
    return {
        "env": {k: v for k, v in os.environ.items() if k.startswith("PIP_") or k in names},
        "prefix": sys.prefix,
        "pip": [origin, _stat_key(origin) if origin else None],
    }


def _stat_key(path: str) -> list[int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns, info.st_ino]


def _pip_configured() -> tuple[tuple[str, str], list[str]]:
    """pip's own reading of its configuration: the same files, in the same order, as `pip config list`
    shows; with the files it looked for."""
    try:
        from pip._internal.configuration import Configuration
        from pip._internal.exceptions import ConfigurationError
        from pip._internal.models.index import PyPI
    except ImportError:
        raise UsageError(
            "no package index: set PIP_INDEX_URL (pip is not installed to read its configuration)"
        ) from None
    configuration = Configuration(isolated=False)
    try:
        configuration.load()
    except ConfigurationError as exc:
        raise UsageError(f"pip's configuration cannot be read: {str(exc).splitlines()[0]}") from None
    files = [path for _, paths in configuration.iter_config_files() for path in paths]
    values = dict(configuration.items())
    for key in _PIP_INDEX_KEYS:
        if values.get(key):
            return (str(values[key]).split()[0], f"pip config {key.removeprefix(':env:.')}"), files
    return (PyPI.simple_url, "pip's default index"), files


def redact(url: str) -> str:
    """The URL without any user:password, so an error line never prints credentials."""
    return re.sub(r"^([a-z][a-z0-9+.-]*://)[^/]*@", r"\1***@", url, flags=re.IGNORECASE)


def http_client() -> httpx.Client:
    """An httpx client with forklift's timeouts; imported lazily: the warm cache path needs no HTTP."""
    import httpx

    return httpx.Client(
        timeout=httpx.Timeout(TIMEOUT_SECONDS, connect=10.0),
        follow_redirects=True,
        headers={"User-Agent": f"forklift/{__version__}"},
    )


@dataclass(frozen=True)
class Deadline:
    """How slow a transfer may get: below `min_rate` bytes/s over any `window` seconds it is stalled.

    The per-read timeout alone lets a server that sends a byte every few seconds hold forklift forever.
    Defaults are generous (10 KiB/s over 60 s); ``FORKLIFT_DOWNLOAD_MIN_RATE`` and
    ``FORKLIFT_DOWNLOAD_WINDOW`` change them.
    """

    min_rate: float = 10 * 1024
    window: float = 60.0

    @classmethod
    def from_env(cls) -> Deadline:
        values = {}
        for field, var in (("min_rate", "FORKLIFT_DOWNLOAD_MIN_RATE"), ("window", "FORKLIFT_DOWNLOAD_WINDOW")):
            if (given := env_number(var, zero=field == "min_rate")) is not None:  # a minimum rate of 0 is allowed
                values[field] = given
        return cls(**values)


def read_guarded(
    response: httpx.Response, url: str, deadline: Deadline | None = None, limit: int | None = None
) -> Iterator[bytes]:
    """The body of an httpx streaming `response` as it arrives, stopped with one line when it stalls
    (below the deadline's rate over a window) or grows past `limit` bytes."""
    deadline = deadline or Deadline.from_env()
    start = mark = time.monotonic()
    marked = 0
    for chunk in response.iter_bytes():  # no chunk size: each piece as it arrives
        received = response.num_bytes_downloaded
        if limit is not None and received > limit:
            raise ForkliftError(f"{redact(url)} sent more than {limit} bytes; refusing the rest")
        now = time.monotonic()
        if now - mark >= deadline.window:
            if (received - marked) / (now - mark) < deadline.min_rate:
                raise ForkliftError(
                    f"stalled: {received} bytes in {now - start:.0f} s from {redact(url)}"
                    f" (under {deadline.min_rate:g} bytes/s for {deadline.window:g} s;"
                    " FORKLIFT_DOWNLOAD_MIN_RATE and FORKLIFT_DOWNLOAD_WINDOW change this)"
                )
            mark, marked = now, received
        yield chunk


def reason(exc: BaseException) -> str:
    """One line saying why a request failed."""
    return " ".join(str(exc).split()) or type(exc).__name__


def project_page_url(package: str, index_url: str | None = None) -> str:
    """`package`'s page on the index: `index_url`, else the one pip would use."""
    index, origin = (index_url, "") if index_url else pip_index_url()
    if not re.match(r"^https?://[^/\s]+", index):
        source = f" (from {origin})" if origin else ""
        raise UsageError(f"index URL {redact(index)}{source}: expected an http(s) PEP 691 simple index URL")
    return f"{index.rstrip('/')}/{canonicalize_name(package)}/"


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
    page = project_page_url(package, index_url)
    # a file a published index has under a name is that file for good (PyPI refuses a second upload of a
    # name), so a pick no later upload can change is remembered: no page fetched, no HTTP client imported.
    # Only an https index counts as published: a plain-http one (a local server) may serve anything next time.
    lasting = page.startswith("https://") and (filename is not None or tags is not None or not wheel)
    key = json.dumps([page, version, filename, wheel, sorted(map(str, tags or ()))]) if lasting else None
    if key is not None and (remembered := _remembered(key)) is not None:
        return remembered
    found = pick_file(fetch_project_page(page, package), page, package, version, filename, wheel=wheel, tags=tags)
    if key is not None and (wheel or filename or found.filename.endswith(".tar.gz")):  # .tar.gz is picked first
        _remember(key, found)
    return found


def release_versions(package: str, index_url: str | None = None) -> tuple[list[str], str]:
    """The versions of `package` on the index with at least one file not yanked, and the page read (redacted)."""
    page = project_page_url(package, index_url)
    entries, _ = parse_project_page(fetch_project_page(page, package), page)
    found = {str(v) for f in entries if not f.get("yanked") and (v := _version_of(f["filename"], package)) is not None}
    return sorted(found, key=Version), redact(page)


def _picks_memo() -> Path:
    from forklift.source.cache import default_cache

    return default_cache().root / "index-picks.json"


def _remembered(key: str) -> IndexFile | None:
    try:
        saved = json.loads(_picks_memo().read_bytes())[key]
        return IndexFile(str(saved[0]), str(saved[1]), None if saved[2] is None else str(saved[2]), saved[3])
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None  # not picked before, or a damaged memo: ask the index


def _remember(key: str, found: IndexFile) -> None:
    memo = _picks_memo()
    try:
        saved = json.loads(memo.read_bytes())
        saved = saved if isinstance(saved, dict) else {}
    except (OSError, ValueError):
        saved = {}
    saved[key] = [found.filename, found.url, found.sha256, found.size]
    write_atomic(memo, json.dumps(saved, sort_keys=True))


def fetch_project_page(page: str, package: str) -> dict[str, Any]:
    # local: httpx ~180 ms at startup (see http_client)
    import httpx

    try:
        with http_client() as client, client.stream("GET", page, headers={"Accept": PEP691_JSON}) as response:
            if response.status_code == 404:
                raise ForkliftError(f"package {package!r} is not on the index {redact(page)}")
            if response.status_code != 200:
                raise ForkliftError(f"the index {redact(page)} answered HTTP {response.status_code}")
            kind = response.headers.get("content-type", "").split(";")[0].strip()
            if kind != PEP691_JSON:
                raise ForkliftError(
                    f"the index {redact(page)} did not answer with PEP 691 JSON ({kind or 'no content-type'})"
                )
            body = b"".join(read_guarded(response, page, limit=MAX_PAGE_BYTES))
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise UnreachableError(f"cannot reach the index {redact(page)}: {reason(exc)}") from None
    try:
        data: dict[str, Any] = json.loads(body)
        return data
    except ValueError as exc:
        raise ForkliftError(f"the index {redact(page)} did not answer with PEP 691 JSON ({reason(exc)})") from None


class _IndexEntry(BaseModel):
    """One file of a PEP 691 project page: the keys forklift reads, typed (others are allowed and ignored)."""

    model_config = ConfigDict(extra="allow")
    filename: StrictStr
    url: StrictStr
    hashes: dict[str, StrictStr]
    size: StrictInt | None = None


class _ProjectPage(BaseModel):
    model_config = ConfigDict(extra="allow")
    files: list[_IndexEntry]
    versions: list[StrictStr] | None = None


def parse_project_page(data: object, page: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The page's files (as dicts) and versions, or one line naming the first malformed field."""
    try:
        parsed = _ProjectPage.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the page"
        got = type(first["input"]).__name__ if not isinstance(first["input"], (str, int)) else repr(first["input"])
        raise ForkliftError(
            f"the index {redact(page)} sent a malformed PEP 691 page: {where}: {first['msg'].lower()} (got {got})"
        ) from None
    return [entry.model_dump() for entry in parsed.files], list(parsed.versions or [])


def pick_file(
    data: object,
    page: str,
    package: str,
    version: str,
    filename: str | None = None,
    *,
    wheel: bool = False,
    tags: frozenset[Tag] | None = None,
) -> IndexFile:
    """Choose the file from a parsed PEP 691 project page (pure)."""
    entries, versions = parse_project_page(data, page)
    files = [f for f in entries if _same_version(_version_of(f["filename"], package), version)]
    where = f"{package} {version} on the index {redact(page)}"
    if not files:
        raise ForkliftError(f"{package} {version} is not on the index {redact(page)}{_latest(versions)}")
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


def _best_wheel(files: list[dict[str, Any]], where: str) -> dict[str, Any]:
    rank = {tag: i for i, tag in enumerate(sys_tags())}
    best: tuple[int, dict[str, Any]] | None = None
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


def _tagged_wheel(files: list[dict[str, Any]], where: str, tags: frozenset[Tag]) -> dict[str, Any]:
    """The wheel built for exactly `tags` (a pin's platform, whatever machine asks)."""
    for f in files:
        if f["filename"].endswith(".whl") and parse_wheel_filename(f["filename"])[3] == tags:
            return f
    shown = ".".join(sorted(str(tag) for tag in tags))
    raise ForkliftError(f"{where} has no wheel tagged {shown} (files: {_names(files)})")


def _index_file(entry: dict[str, Any], page: str) -> IndexFile:
    url = urldefrag(urljoin(page, entry["url"])).url
    return IndexFile(entry["filename"], url, entry["hashes"].get("sha256"), entry["size"])


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


def _names(files: list[dict[str, Any]]) -> str:
    names = [f["filename"] for f in files]
    return ", ".join(names[:6]) + (f", ... ({len(names)} in all)" if len(names) > 6 else "")


def _latest(listed: list[str]) -> str:
    versions = []
    for text in listed:
        try:
            versions.append((Version(text), text))
        except InvalidVersion:
            continue
    return f" (latest: {', '.join(text for _, text in sorted(versions)[-3:])})" if versions else ""
