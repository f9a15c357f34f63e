"""`forklift check` on real series, beside the tools it stands for, in one run.

Three series, all real:

- vLLM: 46 patches cut at run time from upstream's own change between the
  0.32.0 and 0.33.0 sdists on PyPI (never committed): the files upstream changed
  most, the big ones (the GPU model runner, the scheduler...) split into several
  patches by hunk group, and multi-file patches pairing a hunk group with a
  smaller file. Applied to 0.32.0. forklift check vs `cp -r` + `patch -p1
  --fuzz 0` per patch (HyperQwen's apply.sh).
- long: 206 patches cut the same way from the same upstream change (the 857 files it changes are
  plenty), applied to 0.32.0: `forklift check` vs `cp -a` + `quilt push -a --fuzz=0`.
- glibc: Debian's largest series of the differential corpus (tests/series/
  corpus.py fetches it), `forklift check` vs `cp -a` + `quilt push -a --fuzz=0`.

Each forklift row is shown twice: `forklift check` as a user runs it again with nothing changed (the
stored result replayed: series/resultcache.py) and `forklift check --fresh` (the series applied again).

Warm cache, whole CLI (its modules byte-compiled, as an installed wheel's are, even where
PYTHONDONTWRITEBYTECODE is set), best and median of --repeat runs, alternating; cold
(an empty FORKLIFT_CACHE seeded only with the sdist file, so the tree is
extracted and every touched file compiled; glibc's folder pin is hashed where it lies, not copied)
printed beside. Usage:

    .venv/bin/python benchmarks/check_real_series.py [--repeat 5] [--only vllm|long|glibc] [--profile]
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
LONG = 206  # patches in the long series


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


def vllm_series(dest: Path, count: int = PATCHES) -> list[str]:
    """`count` patches from upstream's 0.32.0 -> 0.33.0 change, applied in order to 0.32.0."""
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
    while len(diffs) < count and rest:
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


def forklift_argv(work: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "forklift", "-c", str(work), "check", "--receipts", str(work / "receipts"), *extra]


TARGETS: list[str] = []  # one line per target of issue 22, printed at the end


def target(what: str, runs: list[tuple[float, float]], limit: float) -> None:
    cpu = statistics.median(c for _, c in runs)
    TARGETS.append(f"{what}: {cpu:.3f} s CPU (median) vs <= {limit} s: {'met' if cpu <= limit else 'NOT met'}")


def compared(
    work: Path, theirs: str, env: dict[str, str], their_env: dict[str, str] | None, repeat: int, ok=(0,)
) -> tuple[list[tuple[float, float]], list[tuple[float, float]], list[tuple[float, float]]]:
    """(replayed, fresh, theirs) runs, interleaved; `theirs` is a shell line run in `work`'s parent."""
    timed(forklift_argv(work, "--fresh"), work, env, ok)  # stores the result a replay reads
    replayed, fresh, other = [], [], []
    for _ in range(repeat):
        replayed.append(measured(forklift_argv(work), work, env, ok))
        fresh.append(measured(forklift_argv(work, "--fresh"), work, env, ok))
        other.append(measured(["bash", "-c", theirs], work, their_env))
        shutil.rmtree(work.parent / "theirs")
        subprocess.run(["sync"], check=True)
    return replayed, fresh, other


def print_rows(title: str, first: tuple[float, float], runs: tuple[list, list, list], theirs: str) -> None:
    replayed, fresh, other = runs
    print(title)
    print(HEAD)
    print(row("`forklift check`, nothing changed (the stored result replayed)", replayed))
    print(row(f"`forklift check --fresh` (applied again; cold cache: {first[0]:.2f} s, CPU {first[1]:.2f} s)", fresh))
    print(row(theirs, other))
    print(f"replayed {ratio(replayed, other)}; fresh {ratio(fresh, other)}\n")


def cold(work: Path, sha256: str | None, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one check on an empty cache (seeded with the sdist file only: extraction,
    no download)."""
    from forklift.source.cache import default_cache

    with tempfile.TemporaryDirectory() as cache:
        if sha256:
            seed = Path(cache) / "artifacts" / sha256[:2] / sha256
            seed.parent.mkdir(parents=True)
            shutil.copyfile(default_cache().artifact_path(sha256), seed)
        return measured(forklift_argv(work), work, {**env, "FORKLIFT_CACHE": cache}, ok=(0, 1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="print where a warm vLLM check spends its time")
    parser.add_argument("--only", choices=["vllm", "long", "glibc"], help="run one of the three series")
    args = parser.parse_args()
    # forklift as installed: its modules byte-compiled once (an installed wheel's are), not on every run
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONDONTWRITEBYTECODE", "CI")}
    env["PYTHONPATH"] = str(REPO)
    with tempfile.TemporaryDirectory() as tmp:
        if args.only in (None, "vllm"):
            run_vllm(Path(tmp), args, env)
        if args.only in (None, "long"):
            run_long(Path(tmp), args, env)
        if args.only in (None, "glibc"):
            run_glibc(Path(tmp), args, env)
    print("\n".join(TARGETS))
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def run_vllm(tmp: Path, args: argparse.Namespace, env: dict[str, str]) -> None:
    work = tmp / "vllm" / "dist"
    names = vllm_series(work)
    tree = _tree(*VLLM_032)
    files = sum((work / "patches" / n).read_text().count("diff --git ") for n in names)
    if args.profile:
        profile = [sys.executable, "-m", "cProfile", "-s", "cumtime", "-m", "forklift", "-c", str(work), "check"]
        out = subprocess.run([*profile, "--fresh"], cwd=work, env=env, check=False, capture_output=True, text=True)
        print("\n".join(out.stdout.splitlines()[:60]))
    shell = f"set -e; cp -r {tree} {work.parent}/theirs; cd {work.parent}/theirs; " + "; ".join(
        f"patch -s -p1 --fuzz 0 < {work}/patches/{n}" for n in names
    )
    runs = compared(work, shell, env, None, args.repeat)
    first = cold(work, VLLM_032[1], env)
    print_rows(
        f"vLLM: {len(names)} patches touching {files} file diffs, 0.32.0 -> 0.33.0 upstream change, on 0.32.0",
        first,
        runs,
        f"shell: `cp -r` + {len(names)} x `patch -p1 --fuzz 0`",
    )
    target("vLLM 46-patch check, warm", runs[0], 0.15)


def run_long(tmp: Path, args: argparse.Namespace, env: dict[str, str]) -> None:
    work = tmp / "long" / "dist"
    names = vllm_series(work, LONG)
    tree = _tree(*VLLM_032)
    quilt_env = {**os.environ, "QUILT_PATCHES": str(work / "patches"), "LC_ALL": "C"}
    theirs = f"set -e; cp -a {tree} {work.parent}/theirs; cd {work.parent}/theirs; quilt --quiltrc /dev/null"
    runs = compared(work, theirs + " push -a -q --fuzz=0", env, quilt_env, args.repeat)
    first = cold(work, VLLM_032[1], env)
    print_rows(
        f"long: {len(names)} patches from the same upstream change, on vLLM 0.32.0",
        first,
        runs,
        "`cp -a` + `quilt push -a --fuzz=0`",
    )
    quilt = statistics.median(c for _, c in runs[2])
    for label, ours in (("replayed", runs[0]), ("fresh", runs[1])):
        times = quilt / statistics.median(c for _, c in ours)
        TARGETS.append(
            f"206-patch check ({label}) vs quilt push -a: {times:.1f}x in CPU vs >= 5x: {'met' if times >= 5 else 'NOT met'}"
        )


def run_glibc(tmp: Path, args: argparse.Namespace, env: dict[str, str]) -> None:
    work = tmp / "glibc" / "dist"
    tree, count = glibc_series(work)
    quilt_env = {**os.environ, "QUILT_PATCHES": "debian/patches", "LC_ALL": "C"}
    quilt = f"set -e; cp -a {tree} {work.parent}/theirs; cd {work.parent}/theirs; quilt --quiltrc /dev/null push -a -q --fuzz=0"
    # Debian patches carry trailing whitespace: the check exits 1
    runs = compared(work, quilt, env, quilt_env, args.repeat, ok=(0, 1))
    first = cold(work, None, env)
    print_rows(
        f"glibc: Debian's {count}-patch series over {tree.name}", first, runs, "`cp -a` + `quilt push -a --fuzz=0`"
    )
    target("glibc 109-patch check, warm", runs[0], 0.4)
    met = "met" if first[0] <= 2 else "NOT met"
    TARGETS.append(f"glibc 109-patch check, cold: {first[0]:.2f} s wall ({first[1]:.2f} s CPU) vs <= 2 s: {met}")


if __name__ == "__main__":
    main()
