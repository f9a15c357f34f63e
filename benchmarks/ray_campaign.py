"""What a campaign on a Ray cluster costs, side by side in one run, on a local cluster of this box:

  1. wall time of N light cells (the fake engine of tests/campaign/fake_engine.py: a boot that waits
     --boot-s seconds, as a real one waits on its device, then one tiny bench) run here
     (`executor = "local"`), on one Ray worker node, and on two;
  2. the overhead Ray adds per cell: (one node - here) / N;
  3. the head's memory while 10,000 receipts (3 KB each) stream in through the same receive path
     a campaign uses (campaign.cluster), written into a scratch folder.

The cluster is a head (no cell lands there) and two workers, all on 127.0.0.1, each in its own
process group, stopped by pid at the end. Usage:

    .venv/bin/python benchmarks/ray_campaign.py [--cells 8] [--receipts 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.campaign.test_ray import write_campaign  # noqa: E402
from tests.fixtures.engine import free_port  # noqa: E402
from tests.fixtures.ray_cluster import RayCluster, alive_nodes, on_loopback, start_node  # noqa: E402


def start_cluster(root: Path, boot_s: float) -> RayCluster:
    env = {
        "FAKE_ENGINE_BOOT_S": str(boot_s),
        **os.environ,
        "FORKLIFT_STATE_DIR": str(root / "state"),
        "FAKE_ENGINE_PIDS": str(root / "engines"),
        "RAY_USAGE_STATS_ENABLED": "0",
        "PYTHONPATH": str(REPO),
    }
    port = free_port()
    cluster = RayCluster(f"127.0.0.1:{port}", root, env)
    start_node(cluster, "head", {}, port, num_cpus=0)  # no cell lands on the head
    while not alive_nodes(cluster.address, env):
        pass  # each look is a driver's start: seconds
    start_node(cluster, "worker_a", {"box_a": 1, "box_b": 1}, port, offset=1)  # box_a: one node; box_b: two
    start_node(cluster, "worker_b", {"box_b": 1}, port, offset=2)
    while len(alive_nodes(cluster.address, env)) < 3:
        pass
    return cluster


def campaign(folder: Path, cells: int, box: str | None) -> Path:
    """N cells (N/2 settings x 2 builds) on the nodes offering `box`, or here."""
    write_campaign(folder, boxes=[box] if box else [], modes=[f"m{i}" for i in range(cells // 2)])
    if box is None:
        text = (folder / "campaign.toml").read_text()
        (folder / "campaign.toml").write_text(text.replace('executor = "ray"', 'executor = "local"'))
    return folder


def timed(cluster: RayCluster, folder: Path, ray: bool) -> float:
    args = ["campaign", "campaign.toml", *(["--ray", cluster.address] if ray else [])]
    start = time.perf_counter()
    done = subprocess.run(
        on_loopback("forklift", *args), cwd=folder, env=cluster.env, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"campaign in {folder} failed:\n{done.stdout}\n{done.stderr}")
    return seconds


STREAM = """
import json, resource, sys, tempfile, time
from pathlib import Path
import ray, ray._private.services as services
services.resolve_ip_for_localhost = lambda host: host
from forklift.campaign.cluster import _receive, _Running
from forklift.campaign.node import Message

def many(count):
    body = b"x" * 3000
    for i in range(count):
        yield Message("file", path=f"r{{i}}.json", data=body)

ray.init(address={address!r}, _node_ip_address="127.0.0.1", logging_level="ERROR", log_to_driver=False)
task = ray.remote(num_cpus=0, resources={{"box_a": 1}})(many)
class Head:
    receipts = Path(tempfile.mkdtemp()); logs = receipts; say = print
def rss():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) / 1024
before = rss()
start = time.perf_counter()
running = _Running(cell=type("C", (), {{"key": "k"}})(), attempt=1)
stream = task.remote({count})
first = None
for n, ref in enumerate(stream, 1):
    _receive(Head, running, ray.get(ref))
    if n == {count} // 10:
        first = rss()
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"before": before, "tenth": first, "after": rss(), "peak": peak, "seconds": seconds,
    "files": len(list(Head.receipts.glob("k/*.json")))}}))
"""


def stream(cluster: RayCluster, count: int) -> dict[str, float]:
    code = STREAM.format(address=cluster.address, count=count)
    done = subprocess.run(
        [sys.executable, "-c", code], env=cluster.env, capture_output=True, text=True, check=False, cwd=REPO
    )
    if done.returncode != 0:
        raise SystemExit(done.stdout + done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=int, default=8)
    parser.add_argument("--receipts", type=int, default=10_000)
    parser.add_argument("--boot-s", type=float, default=5.0, help="how long each fake boot waits")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="fkbench", dir="/tmp"))
    cluster = start_cluster(root, args.boot_s)
    try:
        here = timed(cluster, campaign(root / "here", args.cells, None), ray=False)
        one = timed(cluster, campaign(root / "one", args.cells, "box_a"), ray=True)
        two = timed(cluster, campaign(root / "two", args.cells, "box_b"), ray=True)
        memory = stream(cluster, args.receipts)
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"{args.cells} light cells (fake engine, {args.boot_s:g} s boot), wall time:")
    print(f"  here (executor = local)  {here:7.1f} s")
    print(f"  Ray, 1 worker node       {one:7.1f} s")
    print(f"  Ray, 2 worker nodes      {two:7.1f} s   ({two / one:.2f} x one node)")
    print(f"overhead per cell through Ray: {(one - here) / args.cells:.2f} s  (goal < 2 s)")
    print(
        f"head streaming {memory['files']:.0f} receipts of 3 KB: RSS {memory['before']:.0f} MiB before, "
        f"{memory['tenth']:.0f} after the first tenth, {memory['after']:.0f} at the end (peak {memory['peak']:.0f}); "
        f"{memory['files'] / memory['seconds']:.0f} receipts/s"
    )


if __name__ == "__main__":
    main()
