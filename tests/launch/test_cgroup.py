"""The engine inside a memory-bounded cgroup: real kernel limits, real OOM kills, counted by the kernel.

Runs on this host's memory cgroup (v1 here; v2 where its unified tree has the memory controller).
The processes are real: a Python that touches memory until the kernel stops it, the stand-in engine
through the real CLI (its `hog` mode), and the real vLLM CPU engine (tests marked engine).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from forklift.config.profile import MemoryLimits
from forklift.errors import ForkliftError
from forklift.launch import cgroup as cg
from tests.launch.test_supervise import make_dist, receipt, run

HOG = "held = []\nwhile True:\n    held.append(bytearray(8 << 20))"


def host() -> cg.Hierarchy:
    try:
        return cg.find_hierarchy(Path("/proc/self/cgroup").read_text(), Path("/proc/self/mountinfo").read_text())
    except ForkliftError as exc:
        pytest.skip(f"this host has no memory cgroup: {exc}")


def limits(**sizes: object) -> MemoryLimits:
    return MemoryLimits.model_validate(sizes)


def run_inside(group: cg.MemoryCgroup, code: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", code], preexec_fn=group.enter(), timeout=120, check=False)


def test_a_process_over_memory_max_is_killed_and_the_kernel_counts_the_kill():
    hierarchy = host()
    group = cg.create(limits(max="96MiB", swap_max=0), "test", hierarchy)
    try:
        result = run_inside(group, HOG)
        reading = group.reading()
    finally:
        final = group.remove()
    assert result.returncode == -signal.SIGKILL
    assert reading.oom_kills == 1
    if hierarchy.version == 2:
        assert reading.max_events and reading.oom_events
    assert reading.max_bytes == 96 << 20 and reading.swap_max_bytes == 0
    assert reading.peak_bytes is not None and reading.peak_bytes <= (96 << 20)
    assert reading.incidents()["oom_kill"] == 1
    assert final == reading and not group.path.exists()


def test_a_process_within_its_limit_runs_to_the_end_and_its_peak_is_read():
    group = cg.create(limits(max="512MiB"), "test", host())
    try:
        result = run_inside(group, "block = bytearray(64 << 20)")
    finally:
        reading = group.remove()
    assert result.returncode == 0
    assert reading.oom_kills == 0 and "oom_kill" not in reading.incidents()
    assert reading.peak_bytes is not None and reading.peak_bytes >= 64 << 20


def test_remove_kills_a_member_that_left_the_engines_process_group():
    group = cg.create(limits(max="256MiB"), "test", host())
    # A worker that called setsid: `stop` signals the engine's process group and never reaches it.
    stray = subprocess.Popen(
        [sys.executable, "-c", "import os, time; os.setsid(); time.sleep(600)"], preexec_fn=group.enter()
    )
    try:
        assert group.members() == [stray.pid]
        group.remove()
        assert stray.wait(timeout=30) == -signal.SIGKILL
        assert not group.path.exists()
    finally:
        if stray.poll() is None:
            os.kill(stray.pid, signal.SIGKILL)


def test_cgroup_v1_refuses_memory_high_rather_than_dropping_it():
    with pytest.raises(ForkliftError, match=r"^memory.high needs cgroup v2, .*: set max instead$"):
        cg.create(limits(high="1GiB"), "test", cg.Hierarchy(1, Path("/nonexistent")))


def test_v1_bounds_swap_as_memory_plus_swap_and_v2_sets_each_limit():
    sizes = limits(max="1GiB", swap_max="256MiB")
    assert cg._settings(1, sizes) == [("memory.limit_in_bytes", 1 << 30), ("memory.memsw.limit_in_bytes", 1280 << 20)]
    assert cg._settings(2, limits(high="512MiB", max="1GiB", swap_max=0)) == [
        ("memory.high", 512 << 20),
        ("memory.max", 1 << 30),
        ("memory.swap.max", 0),
    ]


def test_a_host_without_a_memory_cgroup_is_said_in_one_line():
    proc = "0::/user.slice\n"
    mountinfo = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"  # no memory controller there
    with pytest.raises(ForkliftError, match=r"^no memory cgroup to run the engine in: .*mounted$"):
        cg.find_hierarchy(proc, mountinfo)


def test_this_hosts_memory_cgroup_is_the_one_the_kernel_lists():
    hierarchy = host()
    assert (hierarchy.parent / "cgroup.procs").exists()
    assert str(os.getpid()) in (hierarchy.parent / "cgroup.procs").read_text().split()


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ({}, "give high or max"),
        ({"max": "1GiB", "high": "2GiB"}, r"high \(2.0GiB\) is above max \(1.0GiB\)"),
        ({"max": "lots"}, "could not parse value and unit from byte string"),
        ({"max": "1GiB", "swap": 0}, "Extra inputs are not permitted"),
    ],
)
def test_bad_memory_tables_are_refused_naming_the_problem(sizes, message):
    with pytest.raises(ValueError, match=message):
        limits(**sizes)


def test_an_engine_over_its_cgroup_is_reported_as_killed_by_the_oom_killer(tmp_path):
    host()
    dist = make_dist(tmp_path, timeout=600)
    with open(tmp_path / "forklift.toml", "a") as fh:
        fh.write('memory = { max = "160MiB", swap_max = 0 }\n')
    result = run(dist, "launch", "fake", mode="hog")
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "error: engine killed during boot by its memory cgroup's OOM killer (1 process(es) over memory.max 0.16 GiB"
        )
    )
    body = receipt(tmp_path)["body"]
    assert body["outcome"] == "died" and body["memory"]["oom_kills"] == 1
    assert not Path(body["memory"]["cgroup"]).exists()


def v2_tree(tmp_path: Path, parent_controls: str, own_controls: str = "") -> cg.Hierarchy:
    """Files shaped as a cgroup v2 tree's (this host binds the memory controller to v1, so v2 cannot run here):
    /sys/fs/cgroup -> process_api -> <id>, forklift in <id>, as on an H100 host (docs/gpu-report/protocols)."""
    top = tmp_path / "cgroup"
    own = top / "process_api" / "b28e6362"
    own.mkdir(parents=True)
    (top / "cgroup.subtree_control").write_text("cpu io memory pids\n")
    (top / "process_api" / "cgroup.subtree_control").write_text(parent_controls)
    (own / "cgroup.subtree_control").write_text(own_controls)
    return cg.Hierarchy(2, own, top)


def test_v2_makes_the_engines_cgroup_beside_forklifts_where_the_parent_gives_memory(tmp_path):
    # the H100 host: its own cgroup holds forklift, so "+memory" there was EBUSY; the parent gives memory
    hierarchy = v2_tree(tmp_path, "cpuset cpu io memory hugetlb pids\n")
    assert cg.v2_home(hierarchy) == hierarchy.parent.parent
    assert (hierarchy.parent / "cgroup.subtree_control").read_text() == ""  # never written


def test_v2_climbs_to_the_nearest_cgroup_that_gives_memory(tmp_path):
    hierarchy = v2_tree(tmp_path, "cpu\n")
    assert cg.v2_home(hierarchy) == hierarchy.top


def test_v2_with_no_cgroup_giving_memory_is_one_line_naming_the_fix(tmp_path):
    hierarchy = v2_tree(tmp_path, "cpu\n")
    (hierarchy.top / "cgroup.subtree_control").write_text("cpu\n")
    (hierarchy.parent / "cgroup.subtree_control").unlink()
    (hierarchy.parent / "cgroup.subtree_control").mkdir()  # a write there fails, as EBUSY does on a real host
    with pytest.raises(ForkliftError, match=r"^cannot give memory cgroups to .*b28e6362's children \(.*\) and no "):
        cg.v2_home(hierarchy)
