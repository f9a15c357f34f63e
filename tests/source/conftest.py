"""Fixtures for the source tests: a real local index server, an empty cache per test."""

from __future__ import annotations

import pytest

from forklift.source.cache import Cache
from tests.source.helpers import serving


@pytest.fixture
def index_server():
    with serving() as state:
        yield state


@pytest.fixture
def dead_index():
    """An index URL on 127.0.0.1 where nothing listens (port taken, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/simple"


@pytest.fixture
def cache(tmp_path) -> Cache:
    return Cache(tmp_path / "cache")
