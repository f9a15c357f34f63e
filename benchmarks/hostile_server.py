"""`forklift bench` against hostile servers: does `--timeout T` hold, and does memory stay bounded, whatever comes?

A fake server (raw asyncio on 127.0.0.1, in this process) answers each case below; for each case, one
`forklift bench --timeout T` process (one request) is run against it and measured from outside:

  record    the error kind the receipt records for the request, and the elapsed it records (end - send);
  wall s    the bench process's wall time, start to exit (boot, the request, the receipt);
  max RSS   the bench process's peak resident memory (its VmHWM, read as it exits);
  sent      how much of its answer the server got to write before forklift hung up.

Cases: the deadline ones (a stalled headers phase, headers or body a byte per second, a stream that never ends)
and the size ones (a single answer of up to 2 GiB: one-token events, one event without a blank line, a gzip bomb
in the stream and in an error body, an error body, a header line, a /metrics page). Targets (issue 23): every
request ends within T + 1 s of its send; the bench process stays under 512 MiB.

    .venv/bin/python benchmarks/hostile_server.py [--timeout 10] [--size-gib 2] [--only CASE,...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# forklift as `python -m forklift` would run it, writing its peak resident memory (VmHWM) to argv[1] at exit:
# getrusage of a child would also count the memory of this process, which it was forked from.
FORKLIFT = [
    str(ROOT / ".venv" / "bin" / "python"),
    "-c",
    "import atexit, runpy, sys; out = sys.argv.pop(1); atexit.register(lambda: open(out, 'w').write("
    "next(line for line in open('/proc/self/status') if line.startswith('VmHWM:')))); "
    "runpy.run_module('forklift', run_name='__main__', alter_sys=True)",
]
MIB = 2**20
EVENT = b'data: {"choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}\n\n'
SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"


def gzip_bomb(decoded: int) -> bytes:
    """A gzip stream of `decoded` zero bytes: one 64 MiB member, repeated (members concatenate)."""
    member = zlib.compressobj(9, zlib.DEFLATED, 31)
    one = member.compress(bytes(64 * MIB)) + member.flush()
    return one * max(1, decoded // (64 * MIB))


class Hostile:
    """One case's answers: `answer(writer)` writes the completion response; GETs get 404 unless overridden."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.sent = 0
        self.bomb = gzip_bomb(size)
        self.answer: Callable[[asyncio.StreamWriter], Awaitable[None]] = self.normal
        self.metrics: Callable[[asyncio.StreamWriter], Awaitable[None]] | None = None
        self.handlers: set[asyncio.Task[None] | None] = set()  # asyncio keeps no reference to a stalled one

    async def write(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(data)
        await writer.drain()
        self.sent += len(data)

    async def repeat(self, writer: asyncio.StreamWriter, head: bytes, unit: bytes, total: int) -> None:
        """`head`, then `unit` over and over up to `total` bytes, as fast as the client reads."""
        await self.write(writer, head)
        block = unit * max(1, MIB // len(unit))
        while self.sent < total:
            await self.write(writer, block)

    async def normal(self, writer: asyncio.StreamWriter) -> None:
        body = EVENT.replace(b"null", b'"stop"') + b"data: [DONE]\n\n"
        await self.write(writer, SSE_HEAD + b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    async def stall(self, writer: asyncio.StreamWriter) -> None:
        await asyncio.Event().wait()

    async def trickle_headers(self, writer: asyncio.StreamWriter) -> None:
        for byte in SSE_HEAD * 1000:
            await self.write(writer, bytes([byte]))
            await asyncio.sleep(1.0)

    async def trickle_body(self, writer: asyncio.StreamWriter) -> None:
        await self.write(writer, SSE_HEAD + b"\r\n")
        for byte in EVENT * 1000:
            await self.write(writer, bytes([byte]))
            await asyncio.sleep(1.0)

    async def endless(self, writer: asyncio.StreamWriter) -> None:
        await self.write(writer, SSE_HEAD + b"\r\n")
        while True:
            await self.write(writer, EVENT)
            await asyncio.sleep(0.001)

    async def events(self, writer: asyncio.StreamWriter) -> None:
        await self.repeat(writer, SSE_HEAD + b"Content-Length: %d\r\n\r\n" % self.size, EVENT, self.size)

    async def no_blank_line(self, writer: asyncio.StreamWriter) -> None:
        await self.repeat(writer, SSE_HEAD + b"Content-Length: %d\r\n\r\ndata: " % self.size, b"a", self.size)

    async def gzip_stream(self, writer: asyncio.StreamWriter) -> None:
        head = SSE_HEAD + b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(self.bomb)
        await self.write(writer, head + self.bomb)

    async def error_body(self, writer: asyncio.StreamWriter) -> None:
        await self.repeat(writer, b"HTTP/1.1 500 X\r\nContent-Length: %d\r\n\r\n" % self.size, b"x", self.size)

    async def gzip_error_body(self, writer: asyncio.StreamWriter) -> None:
        head = b"HTTP/1.1 500 X\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(self.bomb)
        await self.write(writer, head + self.bomb)

    async def header_line(self, writer: asyncio.StreamWriter) -> None:
        await self.repeat(writer, SSE_HEAD + b"X-Long: ", b"a", self.size)

    async def metrics_page(self, writer: asyncio.StreamWriter) -> None:
        await self.repeat(writer, b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % self.size, b"# x\n", self.size)

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.handlers.add(asyncio.current_task())  # type: ignore[arg-type]
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                method, path, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.lower().split(b"\r\n")
                        if line.startswith(b"content-length:")
                    ),
                    0,
                )
                await reader.readexactly(length)
                if method == "POST":
                    await self.answer(writer)
                elif path == "/metrics" and self.metrics is not None:
                    await self.metrics(writer)
                else:
                    writer.write(b"HTTP/1.1 404 X\r\nContent-Length: 0\r\n\r\n")
        writer.transport.abort()


def serve(hostile: Hostile) -> int:
    """Run the fake server in a thread of its own; returns its port."""
    loop = asyncio.new_event_loop()
    started = threading.Event()
    port: list[int] = []

    async def start() -> None:
        server = await asyncio.start_server(hostile.connection, "127.0.0.1", 0)
        port.append(server.sockets[0].getsockname()[1])
        started.set()

    threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True).start()
    started.wait(30)
    return port[0]


def bench(url: str, timeout: float, folder: Path) -> tuple[float, int]:
    """Run one `forklift bench` process; (wall seconds, max RSS in bytes)."""
    cohort = folder / "cohort.jsonl"
    # no max_tokens: the byte limits alone bound the answer (with one, its chunks are bounded too)
    cohort.write_text(json.dumps({"id": "p", "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    peak = folder / "peak"
    argv = [*FORKLIFT, str(peak), "bench", "--url", url, "--model", "m", "--cohort", str(cohort), "--mode", "single"]
    argv += ["--runs", "1", "--warmup", "0", "--timeout", str(timeout), "--receipts", str(folder / "receipts")]
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start, int(peak.read_text().split()[1]) * 1024  # VmHWM: N kB


def recorded(folder: Path) -> tuple[str, float | None]:
    """The request's error kind (ok when none) and the elapsed its record says."""
    [path] = (folder / "receipts").glob("*.json")
    [request] = json.loads(path.read_text())["body"]["cells"][0]["requests"]
    elapsed = None if request["end"] is None else request["end"] - request["send"]
    return request["error_kind"] or "ok", elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=10.0, help="--timeout given to bench (seconds)")
    parser.add_argument("--size-gib", type=float, default=2.0, help="size of each oversized answer")
    parser.add_argument("--only", default="", help="comma-separated case names")
    args = parser.parse_args()
    hostile = Hostile(int(args.size_gib * 2**30))
    url = f"http://127.0.0.1:{serve(hostile)}"
    cases: dict[str, Callable[[asyncio.StreamWriter], Awaitable[None]]] = {
        "normal answer": hostile.normal,
        "stalled headers": hostile.stall,
        "headers, a byte a second": hostile.trickle_headers,
        "body, a byte a second": hostile.trickle_body,
        "endless stream": hostile.endless,
        "one-token events": hostile.events,
        "no blank line": hostile.no_blank_line,
        "gzip bomb stream": hostile.gzip_stream,
        "error body": hostile.error_body,
        "gzip bomb error body": hostile.gzip_error_body,
        "header line": hostile.header_line,
        "/metrics page": hostile.normal,
    }
    only = {name.strip() for name in args.only.split(",") if name.strip()}
    print(f"--timeout {args.timeout:g} s; oversized answers {args.size_gib:g} GiB; targets: <= T+1 s, < 512 MiB")
    print(f"{'case':<26}{'record':<12}{'elapsed s':>10}{'wall s':>8}{'max RSS MiB':>13}{'sent MiB':>10}")
    worst_elapsed, worst_rss = 0.0, 0
    for name, answer in cases.items():
        if only and name not in only:
            continue
        hostile.answer, hostile.sent = answer, 0
        hostile.metrics = hostile.metrics_page if name == "/metrics page" else None
        with tempfile.TemporaryDirectory(prefix="forklift-hostile-") as scratch:
            wall, rss = bench(url, args.timeout, Path(scratch))
            kind, elapsed = recorded(Path(scratch))
        shown = "-" if elapsed is None else f"{elapsed:.2f}"
        print(f"{name:<26}{kind:<12}{shown:>10}{wall:>8.1f}{rss / MIB:>13.0f}{hostile.sent / MIB:>10.1f}", flush=True)
        worst_elapsed, worst_rss = max(worst_elapsed, elapsed or 0.0), max(worst_rss, rss)
    print(
        f"worst: elapsed {worst_elapsed:.2f} s (limit {args.timeout + 1:g}), max RSS {worst_rss / MIB:.0f} MiB (limit 512)"
    )
    sys.exit(0 if worst_elapsed <= args.timeout + 1 and worst_rss < 512 * MIB else 1)


if __name__ == "__main__":
    main()
