"""`forklift flip 0.33.0` on a 46-patch series over vLLM 0.32.0, beside cherry-picking the same commits.

The git way is port-triage's: check out the new tag and cherry-pick each fork
commit in turn, aborting (and noting) the ones that conflict. Both sides run in
this one run on a warm cache (both sdists already extracted; the flip still
asks the index for 0.33.0's sha256, as it must), best of N; the ratio is printed.

The fork is a throwaway bare repository: v0.32.0 = the pristine 0.32.0 sdist
tree, v0.33.0 = the 0.33.0 sdist tree, and commits on v0.32.0: one per vLLM
module (a comment above its first top-level def or class), the change upstream
made to vllm/assets/audio.py (so one patch retires), and a chain of three on
vllm/envs.py whose first edits lines 0.33.0 removed (a conflict and two
patches blocked by it, so the cascade and the evidence are part of the cost).

`--cold` also measures the first flip to the release: both sdists downloaded
and extracted into an empty cache (timed apart), then the flip (which reads
both knob registries for the first time). Usage:

    .venv/bin/python benchmarks/flip_vs_cherry_pick.py [--patches 46] [--repeat 3] [--cold]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from forklift.config.schema import PypiPin  # noqa: E402
from tests.fork.gitfork import branch, commit, init_fork  # noqa: E402

VLLM_032 = PypiPin(
    source="pypi",
    package="vllm",
    version="0.32.0",
    sha256="d2c957d5eee3d0985012151315ddc62cbe0cd368fc96a5fc3510438d9dddf2ad",
)
VLLM_033 = PypiPin(
    source="pypi",
    package="vllm",
    version="0.33.0",
    sha256="f4c33c2503d52bb411146afa9618a4f48bed68912f617e6803ac8d76e4c74112",
)
AUDIO = "vllm/assets/audio.py"
ENVS = "vllm/envs.py"
OVERLAP = "    VLLM_USE_RAY_COMPILED_DAG_OVERLAP_COMM: bool = False\n"
CHAIN = (
    "    VLLM_RAY_DAG_VENDOR_BUFFERS: int = 4\n",
    "    VLLM_RAY_DAG_VENDOR_BUFFER_MB: int = 64\n",
    "    VLLM_RAY_DAG_VENDOR_PIN: bool = False\n",
)
TOML = f"""[upstream]
source = "pypi"
package = "vllm"
version = "0.32.0"
sha256 = "{VLLM_032.sha256}"

[series]
dir = "patches"
patches_md = ""
"""


def trees() -> tuple[Path, Path]:
    from forklift.source.materialize import materialize

    return materialize(VLLM_032, REPO).path, materialize(VLLM_033, REPO).path


def _first_def(lines: list[str]) -> int | None:
    return next((i for i, line in enumerate(lines) if line.startswith(("def ", "class "))), None)


def _lands(old: Path, new: Path) -> bool:
    """Whether a comment above the module's first def lands on the new release (its context is unchanged)."""
    before, after = (p.read_text(encoding="utf-8").splitlines(keepends=True) for p in (old, new))
    at = _first_def(before)
    return at is not None and "".join(before[max(at - 3, 0) : at + 3]) in "".join(after)


def make_fork(old: Path, new: Path, repo: Path, count: int) -> tuple[str, list[str]]:
    """(base commit, the fork's patch commits oldest first); tags v0.32.0 and v0.33.0."""
    git, base = init_fork(old, repo, "v0.32.0")
    new_git, _ = init_fork(new, repo.with_name("new.git"), "v0.33.0")
    git.run("fetch", "-q", str(new_git.repo), "refs/tags/v0.33.0:refs/tags/v0.33.0")
    files = sorted(
        p for p in (old / "vllm").rglob("*.py") if p.stat().st_size > 4000 and (new / p.relative_to(old)).exists()
    )
    files = [p for p in files if _lands(p, new / p.relative_to(old))]
    chosen = files[:: max(len(files) // (count - 4), 1)][: count - 4]
    commits = []
    tip = base
    for number, path in enumerate(chosen, 1):
        rel = path.relative_to(old).as_posix()
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        at = _first_def(lines) or 0
        content = "".join([*lines[:at], f"# forklift benchmark patch {number}\n", *lines[at:]]).encode()
        tip = commit(git, tip, {rel: content}, f"Benchmark patch {number} in {rel}\n\nKind: bench\n")
        commits.append(tip)
    tip = commit(git, tip, {AUDIO: (new / AUDIO).read_bytes()}, "Add the azacinto_foscolo audio asset\n")
    commits.append(tip)
    envs = (old / ENVS).read_text(encoding="utf-8")
    steps = [
        (OVERLAP, OVERLAP.replace("False", "True") + CHAIN[0]),  # 0.33.0 removed the OVERLAP knob: conflicts
        (CHAIN[0], CHAIN[0] + CHAIN[1]),  # builds on the line above: blocked by it
        (CHAIN[1], CHAIN[1] + CHAIN[2]),  # and again
    ]
    for number, (before, after) in enumerate(steps, 1):
        assert envs.count(before) == 1, before
        envs = envs.replace(before, after)
        tip = commit(git, tip, {ENVS: envs.encode()}, f"Ray compiled graph tuning, step {number}\n\nKind: tuning\n")
        commits.append(tip)
    branch(git, "fork", tip)
    return base, commits


def forklift(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """One whole-CLI run, its modules byte-compiled (as an installed wheel's are) even under PYTHONDONTWRITEBYTECODE."""
    env = {key: value for key, value in (env or os.environ).items() if key != "PYTHONDONTWRITEBYTECODE"}
    return subprocess.run(
        [sys.executable, "-c", "from forklift.cli import main; main()", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def cherry_pick_loop(work: Path, commits: list[str]) -> tuple[int, int]:
    """port-triage: switch to the new tag, cherry-pick each commit; returns (picked, stopped)."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    subprocess.run(["git", "-C", str(work), "checkout", "-q", "-f", "-B", "triage", "v0.33.0"], check=True, env=env)
    picked = stopped = 0
    for c in commits:
        proc = subprocess.run(["git", "-C", str(work), "cherry-pick", c], capture_output=True, env=env, check=False)
        if proc.returncode == 0:
            picked += 1
        else:  # a conflict, or a change upstream already has (empty pick): note it and move on
            stopped += 1
            subprocess.run(
                ["git", "-C", str(work), "cherry-pick", "--abort"], capture_output=True, env=env, check=False
            )
            subprocess.run(["git", "-C", str(work), "reset", "-q", "--hard"], capture_output=True, env=env, check=False)
    return picked, stopped


def first_flips(dists: list[Path], root: Path) -> tuple[float, list[tuple[float, float]]]:
    """(download + extract of both sdists into an empty cache, then each dist's first flip: wall, CPU)."""
    env = {**os.environ, "FORKLIFT_CACHE": str(root / "cold-cache")}
    fetch = "from benchmarks.flip_vs_cherry_pick import trees; trees()"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", fetch], cwd=REPO, env=env, check=True)
    fetched = time.perf_counter() - start
    return fetched, [timed_flip(dist, root, env)[:2] for dist in dists]


def _cpu() -> float:
    """CPU seconds (user + system) of the children waited for so far: the box's load does not count."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_flip(dist: Path, root: Path, env: dict[str, str] | None = None) -> tuple[float, float, dict]:
    """(wall seconds, CPU seconds, the JSON report) of one whole-CLI flip."""
    start, cpu = time.perf_counter(), _cpu()
    proc = forklift("-c", str(dist), "flip", "0.33.0", "--json", cwd=root, env=env)
    took, used = time.perf_counter() - start, _cpu() - cpu
    if proc.returncode not in (0, 1):
        sys.exit(f"flip failed: {proc.stderr}")
    return took, used, json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patches", type=int, default=46)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="also time the first flips into an empty cache")
    args = parser.parse_args()
    old, new = trees()
    with tempfile.TemporaryDirectory(prefix="forklift-bench-flip-") as scratch:
        root = Path(scratch)
        base, commits = make_fork(old, new, root / "fork.git", args.patches)
        dists = {"46 patches, a conflict chain": (root / "chain", "fork"), "43 that land": (root / "lands", "fork~3")}
        for dist, ref in dists.values():
            (dist / "patches").mkdir(parents=True)
            (dist / "forklift.toml").write_text(TOML)
            proc = forklift(
                "-c", str(dist), "export", "--from", ref, "--repo", str(root / "fork.git"), "--base", base, cwd=root
            )
            if proc.returncode:
                sys.exit(f"export failed: {proc.stderr}")
            forklift("-c", str(dist), "flip", "0.33.0", "--json", cwd=root)  # warm: trees, registries, page cache
        work = root / "work"
        subprocess.run(["git", "clone", "-q", "--shared", str(root / "fork.git"), str(work)], check=True)
        flips: dict[str, list[float]] = {label: [] for label in dists}
        cpus: dict[str, list[float]] = {label: [] for label in dists}
        reports: dict[str, dict] = {}
        picks = []
        for _ in range(args.repeat):
            for label, (dist, _) in dists.items():
                took, used, reports[label] = timed_flip(dist, root)
                flips[label].append(took)
                cpus[label].append(used)
            start = time.perf_counter()
            picked, stopped = cherry_pick_loop(work, commits)
            picks.append(time.perf_counter() - start)
        cold = first_flips([dist for dist, _ in dists.values()], root) if args.cold else None
    print(f"cherry-pick of the 46: {picked} picked, {stopped} stopped")
    for label, report in reports.items():
        verdicts = [p["verdict"] for p in report["patches"]]
        knobs = "knobs computed" if report["knobs"] else report["knobs_skipped"]
        counts = {v: verdicts.count(v) for v in dict.fromkeys(verdicts)}
        print(f"{label}: {counts}; {knobs}")
    for label, times in flips.items():
        print(
            f"forklift flip 0.33.0, {label:28} best {min(times):6.3f} s   median {statistics.median(times):6.3f} s"
            f"   (CPU best {min(cpus[label]):.3f} s)"
        )
    print(
        f"git checkout + cherry-pick loop of the 46   best {min(picks):6.3f} s   median {statistics.median(picks):6.3f} s"
    )
    chain = flips["46 patches, a conflict chain"]
    print(f"ratio (cherry-pick / flip of the 46, best)  {min(picks) / min(chain):6.2f}x")
    if cold:
        fetched, firsts = cold
        shown = ", ".join(f"{label} {t:.3f} s (CPU {c:.3f} s)" for label, (t, c) in zip(dists, firsts, strict=False))
        print(f"first flips: download + extract {fetched:.3f} s, then {shown} (whole CLI)")


if __name__ == "__main__":
    main()
