"""`forklift check` on real series, beside the tools it stands for, in one run.

Two series, both real:

- vLLM: 46 patches cut at run time from upstream's own change between the
  0.32.0 and 0.33.0 sdists on PyPI (never committed): the files upstream changed
  most, the big ones (the GPU model runner, the scheduler...) split into several
  patches by hunk group, and multi-file patches pairing a hunk group with a
  smaller file. Applied to 0.32.0. forklift check vs `cp -r` + `patch -p1
  --fuzz 0` per patch (HyperQwen's apply.sh).
- glibc: Debian's largest series of the differential corpus (tests/series/
  corpus.py fetches it), `forklift check` vs `cp -a` + `quilt push -a --fuzz=0`.

Warm cache, whole CLI (its modules byte-compiled, as an installed wheel's are, even where
PYTHONDONTWRITEBYTECODE is set), best and median of --repeat runs, alternating; cold
(an empty FORKLIFT_CACHE seeded only with the sdist file, so the tree is
extracted and every touched file compiled) printed beside. Usage:

    .venv/bin/python benchmarks/check_real_series.py [--repeat 5] [--only vllm|glibc] [--profile]
"""

from __future__ import annotations

import argparse
import difflib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

VLLM_032 = ("0.32.0", "d2c957d5eee3d0985012151315ddc62cbe0cd368fc96a5fc3510438d9dddf2ad")
VLLM_033 = ("0.33.0", "f4c33c2503d52bb411146afa9618a4f48bed68912f617e6803ac8d76e4c74112")
BIG = 4  # files split into hunk groups
GROUPS = 4  # hunk groups per big file
PATCHES = 46


def _tree(version: str, sha256: str) -> Path:
    from forklift.config.schema import PypiPin
    from forklift.source.cache import default_cache
    from forklift.source.materialize import materialize

    pin = PypiPin(source="pypi", package="vllm", version=version, sha256=sha256)
    return materialize(pin, REPO, default_cache()).path


def _lines(path: Path) -> list[str]:
    return path.read_bytes().decode("utf-8", "surrogateescape").splitlines(keepends=True)


def _diff(rel: str, old: list[str], new: list[str]) -> str:
    body = "".join(difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}", n=3))
    return f"diff --git a/{rel} b/{rel}\n{body}"


def _groups(old: list[str], new: list[str], count: int) -> list[tuple[list[str], list[str]]]:
    """(before, after) steps taking `old` to `new` one group of upstream's hunks at a time."""
    ops = [op for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if op[0] != "equal"]
    size = max(1, -(-len(ops) // count))
    steps, current = [], list(old)
    for start in range(0, len(ops), size):
        chosen = ops[: start + size]
        out, cursor = [], 0
        for _, i1, i2, j1, j2 in chosen:
            out += old[cursor:i1] + new[j1:j2]
            cursor = i2
        out += old[cursor:]
        steps.append((current, out))
        current = out
    return steps


def vllm_series(dest: Path) -> list[str]:
    """46 patches from upstream's 0.32.0 -> 0.33.0 change, applied in order to 0.32.0."""
    old_tree, new_tree = _tree(*VLLM_032), _tree(*VLLM_033)
    changed = []
    for path in sorted((new_tree / "vllm").rglob("*.py")):
        rel = path.relative_to(new_tree).as_posix()
        before = old_tree / rel
        if before.is_file() and before.read_bytes() != path.read_bytes():
            old, new = _lines(before), _lines(path)
            delta = sum(
                max(i2 - i1, j2 - j1)
                for t, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
                if t != "equal"
            )
            changed.append((len(old), delta, rel, old, new))
    big = sorted((c for c in changed if c[1] >= GROUPS * 3), key=lambda c: -c[0])[:BIG]
    rest = sorted((c for c in changed if c not in big), key=lambda c: -c[1])
    diffs: list[str] = []
    for _, _, rel, old, new in big:  # each big file in hunk groups; each group's patch also takes a small file
        for before, after in _groups(old, new, GROUPS):
            extra = rest.pop()
            diffs.append(_diff(rel, before, after) + _diff(extra[2], extra[3], extra[4]))
    while len(diffs) < PATCHES and rest:
        take = [rest.pop(0) for _ in range(min(1 + len(diffs) % 3, len(rest)))]
        diffs.append("".join(_diff(rel, old, new) for _, _, rel, old, new in take))
    names = []
    (dest / "patches").mkdir(parents=True)
    for number, text in enumerate(diffs, 1):
        name = f"{number:04d}-upstream-0.33.0-part-{number}.patch"
        (dest / "patches" / name).write_text(
            f"Description: upstream change 0.32.0 -> 0.33.0, part {number}\n---\n{text}",
            encoding="utf-8",
            errors="surrogateescape",
        )
        names.append(name)
    (dest / "patches" / "series").write_text("".join(n + "\n" for n in names))
    (dest / "forklift.toml").write_text(
        f'[upstream]\nsource = "pypi"\npackage = "vllm"\nversion = "{VLLM_032[0]}"\nsha256 = "{VLLM_032[1]}"\n'
        '[series]\ndir = "patches"\npatches_md = ""\n'
    )
    return names


def glibc_series(dest: Path) -> tuple[Path, int]:
    """glibc's Debian series as forklift reads it today (subfolder entries flattened into one folder,
    unlisted files left out), pinned as a path to the pristine tree of the corpus."""
    from forklift.source.hashing import directory_digest
    from tests.series.corpus import packages, pristine, series_entries

    tree = pristine(next(p for p in packages() if p.name == "glibc"))
    entries = series_entries(tree)
    (dest / "patches").mkdir(parents=True)
    lines = []
    for name, strip in entries:
        flat = name.replace("/", "__")
        shutil.copyfile(tree / "debian" / "patches" / name, dest / "patches" / flat)
        lines.append(flat + ("" if strip == 1 else f" -p{strip}"))
    (dest / "patches" / "series").write_text("\n".join(lines) + "\n")
    (dest / "forklift.toml").write_text(
        f'[upstream]\nsource = "path"\npath = "{tree}"\nsha256 = "{directory_digest(tree)}"\n'
        '[series]\ndir = "patches"\npatches_md = ""\n'
    )
    return tree, len(entries)


CPU: list[float] = []  # CPU seconds (user + sys, children included) of each timed run, in order


def timed(argv: list[str], cwd: Path, env: dict | None = None, ok=(0,)) -> float:
    """Wall seconds of one run; its CPU seconds go to CPU (on a shared box, wall time waits for others)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if proc.returncode not in ok:
        sys.exit(f"{argv[:3]} failed ({proc.returncode}): {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return elapsed


def measured(argv: list[str], cwd: Path, env: dict | None = None, ok=(0,)) -> tuple[float, float]:
    wall = timed(argv, cwd, env, ok)
    return wall, CPU[-1]


def row(label: str, runs: list[tuple[float, float]]) -> str:
    wall, cpu = [w for w, _ in runs], [c for _, c in runs]
    return f"| {label} | {min(wall):.3f} s | {statistics.median(wall):.3f} s | {statistics.median(cpu):.3f} s |"


HEAD = "| | best | median | CPU (median) |\n|---|---|---|---|"


def ratio(ours: list[tuple[float, float]], theirs: list[tuple[float, float]]) -> str:
    wall = statistics.median(w for w, _ in theirs) / statistics.median(w for w, _ in ours)
    cpu = statistics.median(c for _, c in theirs) / statistics.median(c for _, c in ours)
    return f"ratio (medians): {wall:.1f}x wall, {cpu:.1f}x CPU"


def forklift_argv(work: Path) -> list[str]:
    return [sys.executable, "-m", "forklift", "-c", str(work), "check", "--receipts", str(work / "receipts")]


def cold(work: Path, sha256: str | None) -> float:
    """One check on an empty cache (seeded with the sdist file only: extraction, no download)."""
    from forklift.source.cache import default_cache

    with tempfile.TemporaryDirectory() as cache:
        if sha256:
            seed = Path(cache) / "artifacts" / sha256[:2] / sha256
            seed.parent.mkdir(parents=True)
            shutil.copyfile(default_cache().artifact_path(sha256), seed)
        return timed(forklift_argv(work), work, {**os.environ, "FORKLIFT_CACHE": cache}, ok=(0, 1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="print where a warm vLLM check spends its time")
    parser.add_argument("--only", choices=["vllm", "glibc"], help="run one of the two series")
    args = parser.parse_args()
    # forklift as installed: its modules byte-compiled once (an installed wheel's are), not on every run
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(REPO)
    with tempfile.TemporaryDirectory() as tmp:
        if args.only != "glibc":
            run_vllm(Path(tmp), args, env)
        if args.only != "vllm":
            run_glibc(Path(tmp), args, env)


def run_vllm(tmp: Path, args: argparse.Namespace, env: dict[str, str]) -> None:
    work = Path(tmp) / "vllm"
    names = vllm_series(work)
    tree = _tree(*VLLM_032)
    files = sum((work / "patches" / n).read_text().count("diff --git ") for n in names)
    timed(forklift_argv(work), work, env)  # warm-up: the tree and compile markers are in the cache
    if args.profile:
        profile = [sys.executable, "-m", "cProfile", "-s", "cumtime", "-m", "forklift", "-c", str(work), "check"]
        out = subprocess.run(profile, cwd=work, env=env, check=False, capture_output=True, text=True).stdout
        print("\n".join(out.splitlines()[:60]))
    shell = f"set -e; cp -r {tree} {tmp}/shell; cd {tmp}/shell; " + "; ".join(
        f"patch -s -p1 --fuzz 0 < {work}/patches/{n}" for n in names
    )
    ours, theirs = [], []
    for _ in range(args.repeat):
        ours.append(measured(forklift_argv(work), work, env))
        theirs.append(measured(["bash", "-c", shell], work))
        shutil.rmtree(Path(tmp) / "shell")
        subprocess.run(["sync"], check=True)
    first = cold(work, VLLM_032[1])
    print(f"vLLM: {len(names)} patches touching {files} file diffs, 0.32.0 -> 0.33.0 upstream change, on 0.32.0")
    print(HEAD)
    print(row(f"`forklift check` (whole CLI; cold cache: {first:.2f} s)", ours))
    print(row(f"shell: `cp -r` + {len(names)} x `patch -p1 --fuzz 0`", theirs))
    print(ratio(ours, theirs) + "\n")


def run_glibc(tmp: Path, args: argparse.Namespace, env: dict[str, str]) -> None:
    work = Path(tmp) / "glibc"
    tree, count = glibc_series(work)
    timed(forklift_argv(work), work, env, ok=(0, 1))  # Debian patches carry trailing whitespace: exit 1
    quilt_env = {**os.environ, "QUILT_PATCHES": "debian/patches", "LC_ALL": "C"}
    quilt = f"set -e; cp -a {tree} {tmp}/quilt; cd {tmp}/quilt; quilt --quiltrc /dev/null push -a -q --fuzz=0"
    ours, theirs = [], []
    for _ in range(args.repeat):
        ours.append(measured(forklift_argv(work), work, env, ok=(0, 1)))
        theirs.append(measured(["bash", "-c", quilt], work, quilt_env))
        shutil.rmtree(Path(tmp) / "quilt")
        subprocess.run(["sync"], check=True)
    first = cold(work, None)
    print(f"glibc: Debian's {count}-patch series over {tree.name}")
    print(HEAD)
    print(row(f"`forklift check` (whole CLI; cold cache: {first:.2f} s)", ours))
    print(row("`cp -a` + `quilt push -a --fuzz=0`", theirs))
    print(ratio(ours, theirs))
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
