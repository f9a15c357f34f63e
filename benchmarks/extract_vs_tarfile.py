"""forklift's own extraction (every member written through O_NOFOLLOW descriptors, links resolved at the
end, limits counted) beside the stdlib's `tarfile.extractall(filter="data")`, on the vLLM 0.32.0 sdist.
Both in this one run, best of N, into fresh folders. Usage:

    .venv/bin/python benchmarks/extract_vs_tarfile.py [--repeat 3]

Needs the example's pin in the cache (`forklift -c examples/vllm fetch`).
"""

from __future__ import annotations

import argparse
import shutil
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "vllm" / "forklift.toml"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from forklift.config import load_config
    from forklift.source.cache import default_cache
    from forklift.source.extract import extract_archive

    pin = load_config(EXAMPLE).data.upstream
    artifact = default_cache().artifact_path(pin.sha256)
    if not artifact.is_file():
        raise SystemExit(f"{artifact}: not cached; run `forklift -c examples/vllm fetch` first")

    def ours(dest: Path) -> None:
        extract_archive(artifact, dest, strip_top=True)

    def stdlib(dest: Path) -> None:
        with tarfile.open(artifact) as tar:
            tar.extractall(dest, filter="data")

    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, run in (("forklift", ours), ("tarfile data filter", stdlib)):
            times = []
            for i in range(args.repeat):
                dest = Path(scratch) / f"{name.split()[0]}-{i}"
                start = time.perf_counter()
                run(dest)
                times.append(time.perf_counter() - start)
                shutil.rmtree(dest)
            results[name] = min(times)
    print(f"{artifact.stat().st_size / 1e6:.1f} MB sdist")
    for name, seconds in results.items():
        print(f"{name:>20}: {seconds:.2f} s")
    print(f"ratio forklift / tarfile: {results['forklift'] / results['tarfile data filter']:.2f}")


if __name__ == "__main__":
    main()
