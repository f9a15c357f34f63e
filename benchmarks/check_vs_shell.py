"""`forklift check` of a 40-patch series over the vLLM 0.32.0 tree, beside the shell way.

The shell way is HyperQwen's apply.sh: copy the pristine tree, then
`patch -p1 --fuzz 0` once per patch. Both run on a warm cache, in this one
run, best of N; the ratio is printed. Usage:

    .venv/bin/python benchmarks/check_vs_shell.py [--patches 40] [--repeat 5]
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "vllm" / "forklift.toml"


def pristine_tree() -> Path:
    from forklift.config import load_config
    from forklift.source import materialize

    config = load_config(EXAMPLE)
    return materialize(config.data.upstream, config.root).path


def make_series(tree: Path, dest: Path, count: int) -> list[str]:
    """`count` real patches, one per vLLM module: a comment above its first top-level def or class."""
    files = sorted(p for p in (tree / "vllm").rglob("*.py") if p.stat().st_size > 4000)
    chosen = files[:: max(len(files) // count, 1)][:count]
    names = []
    for number, path in enumerate(chosen, 1):
        rel = path.relative_to(tree).as_posix()
        old = path.read_text(encoding="utf-8").splitlines(keepends=True)
        at = next(i for i, line in enumerate(old) if line.startswith(("def ", "class ")))
        new = [*old[:at], f"# forklift benchmark patch {number}\n", *old[at:]]
        diff = "".join(difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}", n=3))
        name = f"{number:04d}-bench-{path.stem}.patch"
        (dest / "patches" / name).write_text(f"Description: benchmark patch {number}\n---\n{diff}")
        names.append(name)
    (dest / "patches" / "series").write_text("".join(n + "\n" for n in names))
    return names


def timed(label: str, argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"{label} failed: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return elapsed


def summary(label: str, times: list[float]) -> None:
    print(f"{label:<34} best {min(times):6.3f} s   median {statistics.median(times):6.3f} s   ({len(times)} runs)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--patches", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tree = pristine_tree()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "patches").mkdir()
        names = make_series(tree, work, args.patches)
        (work / "forklift.toml").write_text(
            EXAMPLE.read_text()
            .replace('contract = ["0001-scheduler-no-drafts-for-structured-output.patch"]', "contract = []")
            .replace('patches_md = "PATCHES.md"', 'patches_md = ""')
        )
        shell = f"set -e; cp -r {tree} {work}/shell-tree; cd {work}/shell-tree; " + "; ".join(
            f"patch -s -p1 --fuzz 0 < {work}/patches/{n}" for n in names
        )
        forklift = [
            str(REPO / ".venv" / "bin" / "forklift"),
            "-c",
            str(work),
            "check",
            "--receipts",
            str(work / "receipts"),
        ]
        timed("warm-up (forklift check)", forklift, work)
        ours, theirs = [], []
        for _ in range(args.repeat):  # alternate, so both ways see the same box
            ours.append(timed("forklift check", forklift, work))
            theirs.append(timed("shell way", ["bash", "-c", shell], work))
            shutil.rmtree(work / "shell-tree")
            subprocess.run(["sync"], check=True)  # the copy's dirty pages are not the next run's cost
    print(f"{len(names)} patches over {tree}")
    summary("forklift check", ours)
    summary("shell: cp -r + patch --fuzz 0", theirs)
    print(
        f"ratio (median / median): {statistics.median(theirs) / statistics.median(ours):.1f}x;"
        f" ratio (best / best): {min(theirs) / min(ours):.1f}x"
    )


if __name__ == "__main__":
    main()
