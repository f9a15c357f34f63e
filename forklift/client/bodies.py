"""HTTP bodies read within a byte limit: the server under test decides what it sends, not how much forklift holds.

The client's session asks for identity and does not decompress (a gzip bomb is a few KiB on the wire and gigabytes
decoded), so a body that comes encoded anyway is refused rather than read as if it were text.
"""

from __future__ import annotations

import aiohttp

from forklift.client.sse import TooLarge


def refuse_encoded(response: aiohttp.ClientResponse) -> None:
    encoding = response.headers.get("Content-Encoding", "identity")
    if encoding.lower() != "identity":
        raise ValueError(f"{response.url.path}: sent with Content-Encoding {encoding[:40]!r} though identity was asked")


async def read_within(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body, or TooLarge as soon as it passes `limit` bytes."""
    refuse_encoded(response)
    body = bytearray()
    async for data in response.content.iter_any():
        body += data
        if len(body) > limit:
            raise TooLarge(f"{response.url.path}: the answer exceeded the {limit}-byte limit")
    return bytes(body)


async def read_start(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The first `limit` bytes of the body; the rest is never read."""
    body = bytearray()
    async for data in response.content.iter_any():
        body += data[: limit - len(body)]
        if len(body) >= limit:
            break
    return bytes(body)
