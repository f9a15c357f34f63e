"""Peak memory of forklift on hostile file inputs of up to 2 GiB: each input is given to one real command
(`forklift compare`, `bench --cohort`, `check`) in its own process, and that process's max resident set
is read from wait4's rusage when it exits. The figure to hold: under 512 MiB whatever the input.

Inputs: files of 2 GiB (sparse: the size is what forklift sees first), /dev/zero and a FIFO with a writer
that never stops where a receipt, cohort, series file, patch or SHA256SUMS belongs; and files just under
the size limit built to expand the most once parsed (many tiny objects, deep nesting, one huge string).
Usage:

    .venv/bin/python benchmarks/hostile_inputs.py [--gib 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from forklift.fsio import MAX_FILE_MIB

LIMIT = MAX_FILE_MIB * 1024 * 1024
COHORT_HEAD = b'{"id": "a", "prompt": "x", "m": ['
SERIES_TOML = (
    '[upstream]\nsource = "path"\npath = "{up}"\nsha256 = "{sha}"\n\n[series]\ndir = "patches"\npatches_md = ""\n'
)


def run(argv: list[str], cwd: Path) -> tuple[int, float, str]:
    """Exit code, max RSS in MiB and the last stderr line of one forklift process."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "forklift", *argv], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace").strip().splitlines()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss / 1024, (err[-1] if err else "")[:110]


def compare(path: str) -> list[str]:
    return ["compare", path, path]


def bench(cohort: Path) -> list[str]:
    return ["bench", "--url", "http://127.0.0.1:9", "--cohort", str(cohort)]  # refused before any request


def sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


def endless_fifo(path: Path) -> Path:
    """A FIFO with a writer that keeps writing until nobody reads (forklift must never be that reader)."""
    os.mkfifo(path)

    def write() -> None:
        try:
            fd = os.open(path, os.O_WRONLY)  # waits for a reader; forklift never opens it for long
            chunk = b"[" * (1 << 20)
            while True:
                os.write(fd, chunk)
        except OSError:
            return

    threading.Thread(target=write, daemon=True).start()
    return path


def expanding(path: Path, unit: bytes, head: bytes = b"[", tail: bytes = b"]", size: int = LIMIT) -> Path:
    """A JSON file of `size` bytes at most, `unit` repeated (its last comma dropped): the most objects per byte."""
    count = (size - len(head) - len(tail) - 1024) // len(unit)
    with open(path, "wb") as fh:
        fh.write(head)
        block = unit * 65536
        for _ in range(count // 65536):
            fh.write(block)
        fh.write(unit * (count % 65536 - 1))
        fh.write(unit.rstrip(b","))
        fh.write(tail)
    return path


def within_budget(path: Path, unit: bytes, per_unit: int) -> Path:
    """A whole receipt (forklift's envelope) whose body is `unit` repeated up to just under the parse budget."""
    from forklift.fsio import PARSED_PER_BYTE
    from forklift.receipts import new_receipt

    head = new_receipt("bench").model_dump_json(by_alias=True)[:-1].encode() + b', "body": {"x": ['
    head = head.replace(b'"body":{},', b"")
    size = min(LIMIT, PARSED_PER_BYTE * LIMIT // per_unit * len(unit) * 95 // 100)
    return expanding(path, unit, head, b"]}}", size)


def series_dist(root: Path, place: str, make: Callable[[Path], Path]) -> Path:
    """A distribution whose series file, patch or SHA256SUMS is the hostile input."""
    from forklift.source.hashing import directory_digest

    up, dist = root / "up", root / "dist"
    (up / "pkg").mkdir(parents=True, exist_ok=True)
    (up / "pkg" / "m.py").write_text("x = 1\n")
    (dist / "patches").mkdir(parents=True)
    (dist / "forklift.toml").write_text(SERIES_TOML.format(up=up, sha=directory_digest(up)))
    if place != "series":
        (dist / "patches" / "series").write_text("a.patch\n")
    target = dist / "patches" / {"series": "series", "patch": "a.patch", "sums": "SHA256SUMS"}[place]
    if place == "sums":
        (dist / "patches" / "a.patch").write_text("--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
    make(target)
    return dist


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=2.0, help="size of the big inputs")
    args = parser.parse_args()
    big = int(args.gib * 1024**3)
    rows: list[tuple[str, int, float, str]] = []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        cases: list[tuple[str, Callable[[Path], list[str]]]] = [
            ("receipt: 2 GiB file", lambda d: compare(str(sparse(d / "r.json", big)))),
            ("receipt: /dev/zero", lambda d: ["compare", "/dev/zero", "/dev/zero"]),
            ("receipt: endless FIFO *.json", lambda d: compare(str(endless_fifo(d / "r.json")))),
            ("receipt: [{},{},...] at the limit", lambda d: compare(str(expanding(d / "r.json", b"{},")))),
            ("receipt: [0,0,...] at the limit", lambda d: compare(str(expanding(d / "r.json", b"0,")))),
            (
                "receipt: whole, body [{},...] in budget",
                lambda d: compare(str(within_budget(d / "r.json", b"{},", 96))),
            ),
            ("receipt: whole, body [0,...] in budget", lambda d: compare(str(within_budget(d / "r.json", b"0,", 36)))),
            ("receipt: [[[[... at the limit", lambda d: compare(str(expanding(d / "r.json", b"[", b"", b"")))),
            (
                "receipt: one string at the limit",
                lambda d: compare(str(expanding(d / "r.json", b"a", b'{"schema": "', b'"}'))),
            ),
            (
                "cohort: 2 GiB file",
                lambda d: bench(sparse(d / "c.jsonl", big)),
            ),
            ("cohort: /dev/zero", lambda d: bench(Path("/dev/zero"))),
            ("cohort: one line at the limit", lambda d: bench(expanding(d / "c.jsonl", b"{},", COHORT_HEAD, b"]}"))),
            ("series file: /dev/zero", lambda d: ["-c", str(series_dist(d, "series", _dev_zero)), "check"]),
            ("series file: 2 GiB", lambda d: ["-c", str(series_dist(d, "series", lambda p: sparse(p, big))), "check"]),
            ("patch: endless FIFO", lambda d: ["-c", str(series_dist(d, "patch", endless_fifo)), "check"]),
            ("patch: 2 GiB", lambda d: ["-c", str(series_dist(d, "patch", lambda p: sparse(p, big))), "check"]),
            ("SHA256SUMS: 2 GiB", lambda d: ["-c", str(series_dist(d, "sums", lambda p: sparse(p, big))), "check"]),
        ]
        baseline = run(["--version"], root)[1]
        for index, (name, make) in enumerate(cases):
            folder = root / f"case{index}"
            folder.mkdir()
            code, rss, line = run(make(folder), folder)
            rows.append((name, code, rss, line))
    print(f"limit {MAX_FILE_MIB} MiB per file; forklift --version alone: {baseline:.0f} MiB max RSS\n")
    print(f"{'input':38} {'exit':>4} {'max RSS MiB':>11}  message")
    for name, code, rss, line in rows:
        print(f"{name:38} {code:>4} {rss:>11.0f}  {line}")
    worst = max(rss for _, _, rss, _ in rows)
    print(f"\nworst: {worst:.0f} MiB ({'under' if worst < 512 else 'OVER'} 512 MiB)")


def _dev_zero(path: Path) -> Path:
    path.symlink_to("/dev/zero")
    return path


if __name__ == "__main__":
    main()
