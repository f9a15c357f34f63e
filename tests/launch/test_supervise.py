"""Supervised boots through the real CLI, with a stand-in engine for the faults a real one cannot stage on cue:
never healthy, dying during boot, Ctrl-C mid-boot, `forklift stop`, a port in use."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from forklift.launch.supervise import process_alive as alive
from tests.cli import FORKLIFT
from tests.fixtures.engine import distribution_toml, free_port

FAKE = Path(__file__).with_name("fake_engine.py")

PROFILE = """
[profiles.fake]
command = [{python}, {fake}]
model = "fake-model"
port = {port}
health_timeout = {timeout}
args = {{ enforce-eager = true }}
"""


@pytest.fixture
def dist(tmp_path):
    """A distribution folder with a `fake` profile, and the environment the CLI runs in. The health timeout
    is short because one test waits it out; tests that act during boot use `booting_dist` instead."""
    return make_dist(tmp_path, timeout=4)


@pytest.fixture
def booting_dist(tmp_path):
    """As `dist`, but the boot outlasts any loaded box (600 s): a test interrupts it on an event, never
    racing the health timeout."""
    return make_dist(tmp_path, timeout=600)


def make_dist(tmp_path, timeout: float):
    port = free_port()
    (tmp_path / "forklift.toml").write_text(
        distribution_toml(
            PROFILE.format(python=json.dumps(sys.executable), fake=json.dumps(str(FAKE)), port=port, timeout=timeout)
        )
    )
    env = {
        **os.environ,
        "FORKLIFT_STATE_DIR": str(tmp_path / "state"),
        "FAKE_ENGINE_CHILD_PID": str(tmp_path / "child.pid"),
    }
    return tmp_path, port, env


def run(dist, *args, mode="never", **kwargs):
    folder, _, env = dist
    return subprocess.run(
        [*FORKLIFT, "-c", str(folder), *args],
        env={**env, "FAKE_ENGINE_MODE": mode},
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def receipt(folder: Path) -> dict:
    (path,) = (folder / "receipts").glob("*-boot-*.json")
    return json.loads(path.read_text())


def child_pid(folder: Path) -> int:
    return int((folder / "child.pid").read_text())


def test_never_healthy_times_out_with_the_last_log_lines_and_leaves_nothing(dist):
    folder = dist[0]
    result = run(dist, "launch", "fake")
    assert result.returncode == 1
    assert "error: engine not healthy after 4 s; last log lines: request /health | request /health" in result.stderr
    body = receipt(folder)["body"]
    assert receipt(folder)["status"] == "failed" and body["outcome"] == "timeout"
    assert "fake engine: serving fake-model mode=never" in body["last_lines"]
    assert not alive(child_pid(folder))


def test_engine_dying_during_boot_reports_its_fatal_line_not_a_timeout(dist):
    folder = dist[0]
    result = run(dist, "launch", "fake", mode="die")
    assert result.returncode == 1
    assert (
        "error: engine failed during boot (exit code 3): ValueError: No available memory for the cache blocks"
        in result.stderr
    )
    assert receipt(folder)["body"]["outcome"] == "died"
    assert not alive(child_pid(folder))


def test_port_in_use_is_refused_before_anything_starts(dist):
    folder, port, _ = dist
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port))
        busy.listen()
        result = run(dist, "launch", "fake")
    assert result.returncode == 1
    assert f"error: port {port} on 127.0.0.1 is not free" in result.stderr
    assert not (folder / "child.pid").exists() and not (folder / "receipts").exists()


def test_a_command_that_does_not_exist_is_named_and_its_receipt_says_failed(dist):
    folder, port, _ = dist
    missing = folder / "no-such-engine"
    with open(folder / "forklift.toml", "a") as fh:
        fh.write(f'\n[profiles.missing]\ncommand = ["{missing}"]\nmodel = "fake-model"\nport = {port}\n')
    result = run(dist, "launch", "missing")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: cannot start the engine command '{missing}': No such file or directory"
    )
    data = receipt(folder)
    assert data["status"] == "failed" and data["body"]["outcome"] == "refused"
    assert data["body"]["facts"]["fatal"] == f"cannot start the engine command '{missing}': No such file or directory"
    assert not (folder / "state" / f"{port}.json").exists()


def wait_for(predicate, timeout=300.0):  # a ceiling for a loaded box; the predicate is the event
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.1)


@contextmanager
def background_launch(dist, mode):
    """`forklift launch fake` running in the background; killed at the end if a test left it running."""
    folder, _, env = dist
    proc = subprocess.Popen(
        [*FORKLIFT, "-c", str(folder), "launch", "fake"],
        env={**env, "FAKE_ENGINE_MODE": mode},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()


def engine_started(folder: Path) -> bool:
    path = folder / "child.pid"
    return path.exists() and bool(path.read_text())


def test_ctrl_c_during_boot_stops_the_engine_and_its_children(booting_dist):
    dist = booting_dist
    folder = dist[0]
    with background_launch(dist, "never") as proc:
        wait_for(lambda: engine_started(folder))
        os.kill(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == (
        "interrupted: forklift launch stopped by Ctrl-C; the engine and its children were stopped;"
        " the boot receipt is marked interrupted"
    )
    data = receipt(folder)
    assert data["status"] == "interrupted" and data["body"]["outcome"] == "interrupted"
    assert not alive(child_pid(folder))
    engine = [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p).endswith(f"{FAKE} fake-model")]
    assert engine == []


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().split(" --", 1)[0]
    except OSError:
        return ""


def test_forklift_stop_ends_a_serving_launch(dist):
    folder, port, _ = dist
    state = folder / "state" / f"{port}.json"
    with background_launch(dist, "healthy") as proc:
        wait_for(lambda: any('"status": "ok"' in p.read_text() for p in (folder / "receipts").glob("*-boot-*.json")))
        entry = json.loads(state.read_text())
        stopped = run(dist, "stop", "fake")
        assert stopped.returncode == 0, stopped.stderr
        assert f"stopped fake at http://127.0.0.1:{port}" in stopped.stdout
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "ready in" in out and "serving; Ctrl-C or `forklift stop` to end" in out
    assert receipt(folder)["status"] == "ok"
    assert not alive(entry["server"]) and not alive(child_pid(folder))
    assert not state.exists()


def test_forklift_stop_during_boot_interrupts_it(booting_dist):
    dist = booting_dist
    folder, port, _ = dist
    with background_launch(dist, "never") as proc:
        wait_for(lambda: (folder / "state" / f"{port}.json").exists() and engine_started(folder))
        assert run(dist, "stop").returncode == 0
        proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert receipt(folder)["status"] == "interrupted"
    assert not alive(child_pid(folder))


def test_stop_with_nothing_running_says_so(dist):
    result = run(dist, "stop", "fake")
    assert result.returncode == 1 and "error: no running launch of fake" in result.stderr


@pytest.mark.network  # the pinned 0.32.0 sdist stands in for the engine's knob registry
def test_print_needs_no_engine_and_still_checks_knobs(dist):
    result = run(
        dist, "launch", "fake", "--print", "--set", "args.max-model-len=512", "--set", "env.VLLM_LOG_KV_CACHE_BLOCKS=0"
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "# profile fake" and lines[1] == "# argv"
    assert lines[2:5] == [sys.executable, str(FAKE), "fake-model"]
    assert lines[-6:-3] == ["512", "# env", "VLLM_LOG_KV_CACHE_BLOCKS=0"]  # the series' knob: registered
    assert lines[-3:] == ["NCCL_NVLS_ENABLE=0", "TORCH_SYMM_MEM_DISABLE_MULTICAST=1", "NVSHMEM_DISABLE_NVLS=1"]
    assert "knobs checked against the pinned tree plus the series" in result.stderr
    bad = run(dist, "launch", "fake", "--print", "--set", "env.VLLM_LOG_KV_CACHE=0")
    assert bad.returncode == 2
    assert "error: profile fake (--set): VLLM_LOG_KV_CACHE is not a knob registered in vllm/envs.py" in bad.stderr
