"""How long does reading a campaign's receipts take (what `forklift report`, `compare` and the campaign's
pilot each do first)? Before and after, on the receipts as the campaign writes them (indented) and compact.

A campaign folder holds dozens of receipts of a few hundred requests each: every one smaller than the
streaming reader's window, so where its records end, the rest of the file is inside the same window. Reads
the folder (default: the committed H200 campaign, docs/gpu-report/ship/receipts) with this tree's forklift
and with another revision's (--before, default main), each in a fresh process, both forms, three times each
(the best counts); the digest column is of every column read, the same on both rows when both read the same
numbers.

    .venv/bin/python benchmarks/read_campaign.py [--receipts FOLDER] [--before main | --before ""]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from compare_large import ROOT, export

DRIVER = """
import hashlib, json, resource, sys, time
from pathlib import Path
import numpy as np
from forklift.stats.sample import read_bench_runs
def cpu():
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime
start, cpu_start = time.perf_counter(), cpu()
runs, _ = read_bench_runs([Path(sys.argv[1])])
wall, used = time.perf_counter() - start, cpu() - cpu_start
digest = hashlib.sha256()
for run in runs:
    for name in sorted(run.columns):
        for values in vars(run.columns[name]).values():
            digest.update(np.asarray(values).tobytes() if isinstance(values, np.ndarray) else repr(values).encode())
print(json.dumps({"read_s": wall, "cpu_s": used, "receipts": len(runs), "digest": digest.hexdigest()[:16]}))
"""


def measure(tree: Path, folder: Path, repeat: int) -> dict[str, object]:
    """The best of `repeat` reads of `folder`, each in a fresh process of `tree`."""
    rows = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", DRIVER, str(folder)],
            cwd=tree,
            env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise SystemExit(f"read in {tree} failed: {done.stderr.strip().splitlines()[-1]}")
        row: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
    return min(rows, key=lambda row: float(row["read_s"]))  # type: ignore[arg-type]


def rewritten(source: Path, target: Path, indent: int | None) -> Path:
    """Every receipt of `source` written again into `target`, indented (as `forklift` writes them) or compact."""
    for path in source.rglob("*.json"):
        out = target / path.relative_to(source)
        out.parent.mkdir(parents=True, exist_ok=True)
        separators = (",", ":") if indent is None else None
        out.write_text(json.dumps(json.loads(path.read_text()), indent=indent, separators=separators) + "\n")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--receipts", type=Path, default=ROOT / "docs/gpu-report/ship/receipts")
    parser.add_argument("--before", default="main", help="the revision to compare against (default main)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="forklift-read-campaign-") as scratch:
        folder = Path(scratch)
        trees = ([(args.before, export(args.before, folder / "before"))] if args.before else []) + [("this tree", ROOT)]
        print(f"{'form':10}{'tree':12}{'MiB':>6}{'read s':>8}{'(cpu)':>7}{'receipts':>10}  digest")
        for form, indent in (("indented", 2), ("compact", None)):
            receipts = rewritten(args.receipts, folder / form, indent)
            size = sum(p.stat().st_size for p in receipts.rglob("*.json")) / 2**20
            rows = [(name, measure(tree, receipts, args.repeat)) for name, tree in trees]
            for name, row in rows:
                print(
                    f"{form:10}{name[:12]:12}{size:6.1f}{row['read_s']:8.2f}{row['cpu_s']:7.2f}"
                    f"{row['receipts']:>10}  {row['digest']}"
                )
            if len(rows) == 2:
                before, after = rows[0][1], rows[1][1]
                ratio = float(before["cpu_s"]) / float(after["cpu_s"])  # type: ignore[arg-type]
                print(f"{form:10}{'':12}{ratio:.0f}x less CPU; same numbers: {before['digest'] == after['digest']}")


if __name__ == "__main__":
    main()
