"""What `check --verify-cache` (and CI=true) costs: a warm pin lookup, beside the same lookup that re-hashes
the cached vLLM 0.32.0 sdist tree against its recorded listing first. Both in this one run, best of N.

Needs the example's pin in the cache (`forklift -c examples/vllm fetch`). The tree is copied into a
scratch cache so the user's cache is never touched. Usage:

    .venv/bin/python benchmarks/cache_verify.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "vllm" / "forklift.toml"


def best(repeat: int, run) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from forklift.config import load_config
    from forklift.source.cache import Cache
    from forklift.source.materialize import materialize

    config = load_config(EXAMPLE)
    pristine = materialize(config.data.upstream, config.root).path
    files = sum(1 for p in pristine.rglob("*") if p.is_file())
    with tempfile.TemporaryDirectory() as scratch:
        cache = Cache(Path(scratch))
        key = pristine.name
        cache.build_tree(key, lambda dest: shutil.copytree(pristine, dest, symlinks=True))  # records the listing
        trusted = Cache(cache.root)
        verified = Cache(cache.root, verify=True)
        plain = best(args.repeat, lambda: trusted.cached_tree(key))
        checked = best(args.repeat, lambda: verified.cached_tree(key))
        assert verified.cached_tree(key) is not None, "the copied tree failed verification"
    print(f"vLLM 0.32.0 sdist tree: {files} files")
    print(f"warm lookup, trusting the marker: {plain * 1000:.2f} ms")
    print(f"warm lookup, re-hashing the tree: {checked * 1000:.0f} ms")


if __name__ == "__main__":
    main()
