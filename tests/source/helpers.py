"""Helpers for the source tests: a local PEP 691 index on 127.0.0.1, real tarballs, real git.

The index server is a real HTTP server; only its misbehaviour (a lying hash, a cut connection)
is staged, because no public index can be asked to fail on cue.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from forklift.source.cache import Cache

PEP691 = "application/vnd.pypi.simple.v1+json"


@dataclass
class Hosted:
    content: bytes
    listed_sha256: str | None = None  # what the index claims; default: the true hash
    cut_after: int | None = None  # send the full Content-Length, then close after this many bytes
    stall: float = 0.0  # seconds to pause halfway through the body (holds a download open)
    trickle: bool = False  # send 10 bytes at a time, 0.1 s apart, until the client hangs up
    extra: bytes = b""  # sent after the content (Content-Length counts them; the index's size does not)


@dataclass
class IndexServer:
    """Projects are {name: {filename: Hosted}}; the server reads them on every request."""

    url: str = ""
    projects: dict[str, dict[str, Hosted]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    raw_pages: dict[str, bytes] = field(default_factory=dict)  # a project page served as given (malformed JSON)
    trickle_pages: bool = False  # project pages trickle like Hosted.trickle

    def add(self, project: str, filename: str, content: bytes, **how) -> str:
        self.projects.setdefault(project, {})[filename] = Hosted(content, **how)
        return hashlib.sha256(content).hexdigest()

    @property
    def index(self) -> str:
        return self.url + "/simple"


def handler(server_state: IndexServer):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep pytest output clean
            pass

        def do_GET(self):
            server_state.requests.append(self.path)
            parts = self.path.strip("/").split("/")
            if parts[0] == "simple" and len(parts) == 2 and parts[1] in server_state.raw_pages:
                return self._send(server_state.raw_pages[parts[1]], PEP691, trickle=server_state.trickle_pages)
            if parts[0] == "simple" and len(parts) == 2 and parts[1] in server_state.projects:
                return self._page(parts[1])
            if parts[0] == "files" and len(parts) == 2:
                for files in server_state.projects.values():
                    if parts[1] in files:
                        return self._file(files[parts[1]])
            self.send_error(404)

        def _page(self, project):
            files = [
                {
                    "filename": name,
                    "url": f"../../files/{name}",  # relative, as PEP 691 allows
                    "hashes": {"sha256": hosted.listed_sha256 or hashlib.sha256(hosted.content).hexdigest()},
                    "size": len(hosted.content),
                }
                for name, hosted in server_state.projects[project].items()
            ]
            body = json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": files}).encode()
            self._send(body, PEP691, trickle=server_state.trickle_pages)

        def _send(self, body: bytes, kind: str, trickle: bool = False):
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if trickle:
                return self._trickle(body)
            self.wfile.write(body)

        def _trickle(self, body: bytes):
            """10 bytes every 0.1 s; ends when the client hangs up (bounded: at most 10 minutes)."""
            for start in range(0, min(len(body), 60000), 10):
                try:
                    self.wfile.write(body[start : start + 10])
                    self.wfile.flush()
                except OSError:  # the client gave up: what the test waits for
                    return
                time.sleep(0.1)

        def _file(self, hosted: Hosted):
            if hosted.trickle or hosted.extra:
                return self._send(hosted.content + hosted.extra, "application/octet-stream", trickle=hosted.trickle)
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(hosted.content)))
            self.end_headers()
            if hosted.cut_after is None:
                half = len(hosted.content) // 2
                self.wfile.write(hosted.content[:half])
                time.sleep(hosted.stall)
                self.wfile.write(hosted.content[half:])
            else:
                self.wfile.write(hosted.content[: hosted.cut_after])
                self.wfile.flush()
                self.close_connection = True

    return Handler


@contextmanager
def serving() -> Iterator[IndexServer]:
    """A real index on 127.0.0.1 serving what the yielded IndexServer holds, until the block ends."""
    state = IndexServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler(state))
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def cache_entries(cache: Cache) -> dict[str, list[str]]:
    """What the cache holds, by area (tmp must always end empty)."""
    return {
        area: sorted(p.name for p in (cache.root / area).iterdir()) if (cache.root / area).is_dir() else []
        for area in ("trees", "tmp")
    } | {"artifacts": sorted(p.name for p in (cache.root / "artifacts").glob("*/*"))}


def make_tar(members: list[tuple[str, str, str | bytes]], mode: str = "w:gz") -> bytes:
    """A tarball from (name, type, payload) with type one of file, dir, symlink, hardlink, fifo, chardev."""
    types = {
        "file": tarfile.REGTYPE,
        "dir": tarfile.DIRTYPE,
        "symlink": tarfile.SYMTYPE,
        "hardlink": tarfile.LNKTYPE,
        "fifo": tarfile.FIFOTYPE,
        "chardev": tarfile.CHRTYPE,
    }
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode) as tar:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            info.type = types[kind]
            info.mode = 0o755 if kind == "dir" else 0o644
            data = None
            if kind == "file":
                data = payload.encode() if isinstance(payload, str) else payload
                info.size = len(data)
            elif kind in ("symlink", "hardlink"):
                info.linkname = payload
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def sdist_bytes(top: str = "pkg-1.0", extra: list | None = None) -> bytes:
    """A small, well-formed sdist: one top folder NAME-VERSION with its PKG-INFO, a package and a script."""
    name, _, version = top.rpartition("-")
    return make_tar(
        [
            (top, "dir", ""),
            (f"{top}/PKG-INFO", "file", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
            (f"{top}/pkg/__init__.py", "file", "VALUE = 1\n"),
            (f"{top}/pkg/link.py", "symlink", "__init__.py"),
            *(extra or []),
        ]
    )


def git(cwd: Path, *args: str) -> str:
    """Real git with a fixed identity; returns stdout."""
    result = subprocess.run(
        [
            "git",
            "-c",
            "user.name=forklift-test",
            "-c",
            "user.email=test@forklift.invalid",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "tag.gpgSign=false",
            "-c",
            "commit.gpgSign=false",
            *args,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()
