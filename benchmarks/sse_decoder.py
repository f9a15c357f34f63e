"""Is the SSE decoder linear in its input? The decoder before and after, side by side, in one run.

A hostile server sends one event of N MiB without a blank line, in 64 KiB reads, then ends it. The decoder as it
was (read from git at BEFORE, the last commit before the change) re-joined its whole buffer on every read, so its
time grew with N squared; today's holds the unended event once and searches only the new bytes. Both decoders are
given the same reads; today's with its event limit raised above N, so what is timed is the decoding, not the refusal
(with the default 8 MiB limit it refuses the event as soon as it passes the limit). A second row times an ordinary
stream (one-token events) to show the common case did not get slower.

    .venv/bin/python benchmarks/sse_decoder.py [--sizes 1,2,4,8,16] [--after-sizes 32,64,128] [--before REV]

`--after-sizes` are run with today's decoder only (the old one takes minutes there: 163 s at 128 MiB).
"""

from __future__ import annotations

import argparse
import subprocess
import time
import types
from collections.abc import Callable
from pathlib import Path

from forklift.client.sse import SSEDecoder

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "d36ac88"  # main before the decoder became linear
READ = 64 * 2**10
MIB = 2**20


def old_decoder(rev: str) -> type:
    """The decoder class as it stood at `rev` (git show), loaded as a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{rev}:forklift/client/sse.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    module = types.ModuleType("sse_before")
    exec(compile(source, f"{rev}:forklift/client/sse.py", "exec"), module.__dict__)
    return module.SSEDecoder  # type: ignore[no-any-return]


def one_long_event(mib: int) -> list[bytes]:
    reads = [b"data: "] + [b"a" * READ] * (mib * MIB // READ)
    return [*reads, b"\n\n"]


def ordinary_stream(mib: int) -> list[bytes]:
    event = b'data: {"choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}\n\n'
    whole = event * (mib * MIB // len(event))
    return [whole[i : i + READ] for i in range(0, len(whole), READ)]


def seconds(make: Callable[[], object], reads: list[bytes]) -> tuple[float, int]:
    decoder = make()
    start = time.perf_counter()
    events = sum(len(decoder.feed(data)) for data in reads)  # type: ignore[attr-defined]
    return time.perf_counter() - start, events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,2,4,8,16", help="MiB, both decoders")
    parser.add_argument("--after-sizes", default="32,64,128", help="MiB, today's decoder only")
    parser.add_argument("--before", default=BEFORE, help="git revision of the decoder to compare against")
    args = parser.parse_args()
    before = old_decoder(args.before)
    both = [int(s) for s in args.sizes.split(",") if s]
    after_only = [int(s) for s in args.after_sizes.split(",") if s]
    print(f"{'input':<34}{'before s':>10}{'after s':>10}{'before/after':>14}")
    for shape, reads_of in (("one event, no blank line", one_long_event), ("one-token events", ordinary_stream)):
        for mib in both + after_only:
            reads = reads_of(mib)
            now, events = seconds(lambda mib=mib: SSEDecoder(max_event_bytes=(mib + 1) * MIB), reads)
            if mib in both:
                then, events_then = seconds(before, reads)
                assert events_then == events, f"{shape} {mib} MiB: {events_then} events before, {events} after"
                row = f"{then:>10.3f}{now:>10.3f}{then / now:>13.1f}x"
            else:
                row = f"{'-':>10}{now:>10.3f}{'-':>14}"
            print(f"{f'{shape}, {mib} MiB':<34}{row}", flush=True)


if __name__ == "__main__":
    main()
