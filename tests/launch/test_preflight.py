"""Preflight pieces that need no engine: the CUDA build against the driver, and stop without a supervisor."""

from __future__ import annotations

import subprocess
import sys

from forklift.launch.preflight import cuda_mismatch
from forklift.launch.running import Running, listed, register, stop_running
from forklift.launch.supervise import group_alive


def test_cuda_build_newer_than_the_driver_is_named():
    assert cuda_mismatch("12.8", "12.4") == (
        "the engine's torch is built for CUDA 12.8, the driver supports up to CUDA 12.4"
    )
    assert cuda_mismatch("12.4", "12.8") is None
    assert cuda_mismatch(None, "12.8") is None  # a CPU build: nothing to compare


def test_stop_kills_the_group_when_the_supervisor_is_gone(tmp_path, monkeypatch):
    monkeypatch.setenv("FORKLIFT_STATE_DIR", str(tmp_path))
    # An orphaned engine: its own process group with a child, and a supervisor pid that no longer runs.
    engine = subprocess.Popen(
        [sys.executable, "-c", "import subprocess,sys,time; subprocess.Popen([sys.executable,'-c','import time; time.sleep(600)']); time.sleep(600)"],
        start_new_session=True,
    )
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    entry = Running("p", "http://127.0.0.1:1", 1, gone.pid, engine.pid, "log")
    register(entry)
    try:
        assert listed() == [entry]
        stop_running(entry)
        engine.wait(timeout=10)
        assert not group_alive(engine.pid)
        assert listed() == []
    finally:
        if engine.poll() is None:
            engine.kill()
