"""Stream a file from the index into the cache, checking size and sha256 before it lands."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from forklift.errors import ForkliftError, UnreachableError
from forklift.source.cache import Cache
from forklift.source.index import IndexFile, http_client, read_guarded, reason, redact

if TYPE_CHECKING:
    import httpx
    from rich.console import Console


def download(file: IndexFile, sha256: str, cache: Cache, progress: Console | None = None) -> Path:
    """The cached artifact for `file`, downloaded when absent; `sha256` is the pinned hash.

    `progress` is a rich Console to draw a download bar on, or None for silence.
    """
    # local: httpx ~180 ms at startup; a warm cache never downloads
    import httpx

    if file.sha256 and file.sha256 != sha256:
        raise ForkliftError(
            f"sha256 mismatch for {file.filename}: forklift.toml pins {sha256}, the index lists {file.sha256}"
        )
    url = redact(file.url)
    response = None
    try:
        identity = {"Accept-Encoding": "identity"}  # the bytes as stored, so size and hash are the file's
        with http_client() as client, client.stream("GET", file.url, headers=identity) as response:
            if response.status_code != 200:
                raise ForkliftError(f"download of {url} failed: HTTP {response.status_code}")
            total = file.size or _length(response)
            stream = read_guarded(response, file.url)
            if progress is not None:
                stream = _with_bar(stream, file.filename, total, progress)
            return cache.ingest(sha256, stream, what=url, size=total)
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise UnreachableError(f"cannot reach {url}: {reason(exc)}") from None
    except httpx.HTTPError as exc:
        # the bytes that really arrived, not those handed on so far (a read buffers up to a chunk)
        received = response.num_bytes_downloaded if response is not None else 0
        raise ForkliftError(f"truncated download of {url}: cut off after {received} bytes: {reason(exc)}") from None


def _length(response: httpx.Response) -> int | None:
    value = response.headers.get("content-length")
    return int(value) if value and value.isdigit() else None


def _with_bar(stream: Iterator[bytes], name: str, total: int | None, console: Console) -> Iterator[bytes]:
    # local: rich.progress ~60 ms; only a drawn download bar needs it
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    columns = (TextColumn(name), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(name, total=total)
        for chunk in stream:
            bar.advance(task, len(chunk))
            yield chunk
