"""Scratch copies a killed process left (`.NAME.*.tmp` beside a written file, folders in the cache's tmp/)
are removed by the next run; those of a process still at work are kept.

The writer is a real child process stopped mid-write and killed with SIGKILL: the fault is injected by
making its fsync wait (no real part can be killed at an exact point otherwise).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from forklift.fsio import write_atomic
from forklift.source.cache import Cache

STALLED_WRITE = """
import os, sys, time
from pathlib import Path
from forklift import fsio
def stall(fd):
    print("ready", flush=True)
    time.sleep(600)
os.fsync = stall
fsio.write_atomic(Path(sys.argv[1]), "half")
"""

STALLED_SCRATCH = """
import sys, time
from pathlib import Path
from forklift.source.cache import Cache
with Cache(Path(sys.argv[1])).scratch() as folder:
    (folder / "part").write_text("half")
    print(folder, flush=True)
    time.sleep(600)
"""


def stalled(script: str, arg: Path) -> tuple[subprocess.Popen[str], str]:
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), str(arg)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    return child, child.stdout.readline().strip()  # the child says it is mid-write: no waiting on the clock


def killed(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait()


def aged(path: Path) -> None:
    os.utime(path, (1, 1))  # past the grace a fresh copy gets


def test_a_copy_left_by_a_killed_writer_is_swept_by_the_next_write(tmp_path):
    out = tmp_path / "out"
    dead, _ = stalled(STALLED_WRITE, out)
    killed(dead)
    [left] = list(tmp_path.glob(".out.*.tmp"))
    live, _ = stalled(STALLED_WRITE, out)
    try:
        [held] = [p for p in tmp_path.glob(".out.*.tmp") if p != left]
        aged(left)
        aged(held)
        write_atomic(out, "whole")
        assert out.read_text() == "whole"
        assert not left.exists() and held.exists()  # the live writer's copy stays
    finally:
        killed(live)


def test_a_scratch_folder_of_a_killed_process_is_swept_under_its_lock(tmp_path):
    dead, left = stalled(STALLED_SCRATCH, tmp_path)
    killed(dead)
    assert (Path(left) / "part").is_file()
    live, held = stalled(STALLED_SCRATCH, tmp_path)  # the next run sweeps what the dead one left
    try:
        assert not Path(left).exists() and Path(held).is_dir()
        with Cache(tmp_path).scratch() as mine:  # and a run beside a live one leaves that one alone
            assert mine.is_dir()
        assert sorted(p.name for p in (tmp_path / "tmp").iterdir()) == [Path(held).name]
    finally:
        killed(live)
