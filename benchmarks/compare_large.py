"""How long, and how much memory, does `forklift compare` take on a receipt of many records? Before and after.

Writes two bench receipts of --records requests each (one cell, four kept runs, 16 one-token
chunks a request, B 3 % slower), then times compare over them with this tree's forklift and with
another revision's (--before, default main), each in a fresh process, phase by phase: reading
the receipts (JSON and schema), and comparing them, in wall and CPU seconds (CPU: what a busy box
does not distort). Peak resident memory is the process's own.

    .venv/bin/python benchmarks/compare_large.py [--records 1000000] [--before main | --before ""]

`--before ""` measures this tree alone (the old path holds about 6 KiB a record: mind the memory). The
other revision reads each file whole, so its size limit is raised to the receipts' size for it alone. The
result column is a digest of the whole comparison: the same on both rows when both read the same numbers.

The other revision is exported with `git archive` into a scratch folder and run with this
tree's virtual environment.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DRIVER = """
import hashlib, json, resource, sys, time
from pathlib import Path
from forklift.stats import compare_groups
try:
    from forklift.stats.sample import read_bench_runs
    def side(path):
        return read_bench_runs([path])[0]
except ImportError:  # a revision before the streaming reader: whole files, a model per record
    from forklift.receipts import read_receipts
    from forklift.stats import bench_runs
    def side(path):
        return bench_runs(read_receipts([path]))
def cpu():
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime
start, cpu_start = time.perf_counter(), cpu()
a = side(Path(sys.argv[1]))
b = side(Path(sys.argv[2]))
read, cpu_read = time.perf_counter() - start, cpu() - cpu_start
result = compare_groups(a, b)
tpot = result.cells[0].metric("tpot")
print(json.dumps({
    "read_s": read,
    "compare_s": time.perf_counter() - start - read,
    "read_cpu_s": cpu_read,
    "compare_cpu_s": cpu() - cpu_start - cpu_read,
    "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "tpot": tpot.verdict if hasattr(tpot, "verdict") else None,
    "result": hashlib.sha256(result.model_dump_json(exclude={"paths_a", "paths_b"}).encode()).hexdigest()[:16],
}))
"""


def write_receipt(path: Path, records: int, slower: float, seed: int) -> None:
    """A bench receipt through the envelope's own model, its body's requests written row by row."""
    sys.path.insert(0, str(ROOT))
    from forklift.receipts import new_receipt

    rng = random.Random(seed)
    envelope = json.loads(new_receipt("bench", engine_version="0.26.0", body={}).model_dump_json(by_alias=True))
    runs = 4
    head = {
        "url": "http://127.0.0.1:8000",
        "model": "m",
        "mode": "single",
        "workload": {
            "name": "big",
            "hash": "w" * 64,
            "corpus_hash": "c" * 64,
            "sampling": {"preset": "greedy", "temperature": 0.0},
            "max_tokens": 16,
            "salted": False,
        },
    }
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(envelope)[:-1].replace('"body": {}', '"body": ' + json.dumps(head)[:-1]))
        out.write(', "cells": [{"name": "c64", "concurrency": 64, "runs": 4, "kept_runs": [0, 1, 2, 3], "requests": [')
        for i in range(records):
            run, prompt = divmod(i, records // runs)
            send = prompt * 0.001
            first = send + 0.05 * rng.lognormvariate(0, 0.05)
            gap = 0.004 * slower * rng.lognormvariate(0, 0.02)
            chunks = [[first + k * gap, 1] for k in range(16)]
            record = {
                "prompt_id": f"p{prompt}",
                "run": run,
                "send": send,
                "first_token": first,
                "end": chunks[-1][0],
                "chunks": chunks,
                "prompt_tokens": 20,
                "completion_tokens": 16,
                "tokens_from": "usage",
                "chunk_tokens_from": "usage",
                "finish_reason": "length",
                "status": 200,
                "output_sha256": "ab" * 32,
            }
            out.write(("," if i else "") + json.dumps(record))
        out.write("]}]}}\n")


def export(revision: str, folder: Path) -> Path:
    archive = subprocess.run(["git", "archive", revision, "forklift"], cwd=ROOT, capture_output=True, check=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def measure(tree: Path, a: Path, b: Path, limit_mib: int | None = None) -> dict[str, object]:
    """One compare in a fresh process of `tree`; `limit_mib`: the file size limit it needs to read them whole."""
    env = {"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}
    if limit_mib is not None:
        env["FORKLIFT_MAX_FILE_MIB"] = str(limit_mib)
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(a), str(b)], cwd=tree, env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"compare in {tree} failed: {done.stderr.strip().splitlines()[-1]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--before", default="main", help="the revision to compare against (default main)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="forklift-compare-large-") as scratch:
        folder = Path(scratch)
        a, b = folder / "a.json", folder / "b.json"
        write_receipt(a, args.records, 1.0, seed=1)
        write_receipt(b, args.records, 1.03, seed=2)
        size = a.stat().st_size / 2**20
        print(f"two receipts of {args.records:,} records each ({size:,.0f} MiB each)")
        whole = 2 * int(a.stat().st_size / 2**20) + 1  # a whole-file reader needs its limit (and parse budget) raised
        rows = [(args.before, measure(export(args.before, folder / "before"), a, b, whole))] if args.before else []
        rows.append(("this tree", measure(ROOT, a, b)))
        print(f"{'':10}{'read s':>8}{'(cpu)':>7}{'compare s':>11}{'(cpu)':>7}{'total s':>9}{'peak MiB':>10}  result")
        for name, row in rows:
            total = float(row["read_s"]) + float(row["compare_s"])  # type: ignore[arg-type]
            print(
                f"{name[:10]:10}{row['read_s']:8.1f}{row['read_cpu_s']:7.1f}{row['compare_s']:11.1f}"
                f"{row['compare_cpu_s']:7.1f}{total:9.1f}{row['peak_mib']:10.0f}  {row['result']}"
            )
        if len(rows) == 2:
            before, after = rows[0][1], rows[1][1]
            cpu = (before["read_cpu_s"] + before["compare_cpu_s"]) / (after["read_cpu_s"] + after["compare_cpu_s"])  # type: ignore[operator]
            print(
                f"{cpu:.1f}x less CPU, {before['peak_mib'] / after['peak_mib']:.1f}x less memory; "  # type: ignore[operator]
                f"same result: {'yes' if before['result'] == after['result'] else 'NO'}"
            )
        print(f"TPOT: {rows[-1][1]['tpot']}")


if __name__ == "__main__":
    main()
