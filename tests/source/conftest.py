"""Fixtures for the source tests: a real local index server, an empty cache per test."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer

import pytest

from forklift.source.cache import Cache
from tests.source.helpers import IndexServer, handler


@pytest.fixture
def index_server():
    state = IndexServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler(state))
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()
    thread.join()


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
