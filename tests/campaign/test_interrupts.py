"""Ctrl-C propagates: a cut cell, suite or command records nothing as finished, exits 130, and a resume reruns it.

The interrupt is an event, not a race with wall time: FORKLIFT_INTERRUPT_AT names the point where the process
sends itself SIGINT (forklift.errors.interrupt_point), as a terminal's Ctrl-C would arrive there. The engines are
stand-ins (a real boot is a minute of this box per cell): the campaign's is tests/campaign/fake_engine.py, an
OpenAI-style server a bench completes against; `launched` and quality use tests/launch/fake_engine.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from forklift.config import load_config
from forklift.errors import INTERRUPT_ENV
from forklift.launch.plan import make_launch_plan
from forklift.launch.session import launched
from forklift.launch.supervise import process_alive
from forklift.receipts.store import read_receipts
from tests.campaign.test_ray import CELL_S, cells, engines_alive, write_campaign
from tests.cli import FORKLIFT
from tests.launch.test_supervise import child_pid, make_dist


def campaign(folder: Path, interrupt: str | None) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "FORKLIFT_STATE_DIR": str(folder / "state"),
        "FAKE_ENGINE_PIDS": str(folder / "pids"),
        INTERRUPT_ENV: interrupt or "",
    }
    return subprocess.run(
        [*FORKLIFT, "campaign", "campaign.toml"], cwd=folder, env=env, capture_output=True, text=True, timeout=CELL_S
    )


def local_campaign(folder: Path) -> Path:
    write_campaign(folder, boxes=[], modes=["x"])  # two cells: A, then B
    text = (folder / "campaign.toml").read_text().replace('executor = "ray"\n', "")
    (folder / "campaign.toml").write_text(text)
    return folder


def engine_pids(folder: Path) -> list[int]:
    return [int(p.name.split("-")[1]) for p in (folder / "pids").glob("engine-*")]


@pytest.mark.parametrize(
    ("point", "finished"),
    [
        ("campaign-suite@2", ["r1-tiny_mode=x-1-A"]),  # B booted, its bench not begun
        ("bench-request@3", []),  # A's bench cut after its third answer (asyncio's Ctrl-C: the task cancelled)
    ],
)
def test_a_cut_cell_is_never_recorded_and_a_resume_runs_it_again(tmp_path, point, finished):
    folder = local_campaign(tmp_path)
    cut = campaign(folder, point)
    assert cut.returncode == 130, cut.stdout + cut.stderr
    assert f"interrupted: {len(finished)} of 2 cells finished; run the same command again to resume" in cut.stdout
    assert "Traceback" not in cut.stderr
    assert sorted(r.body["key"] for r in cells(folder)) == finished
    assert all(r.status == "ok" and r.body["suites"] for r in cells(folder))
    assert engines_alive(engine_pids(folder)) == []
    if point.startswith("bench-request"):
        (bench,) = [r for _, r in read_receipts([folder / "receipts"]) if r.kind == "bench"]
        assert bench.status == "interrupted"

    resumed = campaign(folder, None)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "unfinished cell moved aside" in resumed.stdout
    done = cells(folder)
    assert sorted(r.body["key"] for r in done) == ["r1-tiny_mode=x-1-A", "r1-tiny_mode=x-2-B"]
    assert all(r.status == "ok" and [s["status"] for s in r.body["suites"]] == ["ok"] for r in done)


def test_ctrl_c_inside_a_launched_block_stops_the_engine_and_propagates(tmp_path, monkeypatch):
    folder, _, env = make_dist(tmp_path, timeout=600)
    for key in ("FORKLIFT_STATE_DIR", "FAKE_ENGINE_CHILD_PID"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.setenv("FAKE_ENGINE_MODE", "healthy")
    config = load_config(folder / "forklift.toml")
    plan = make_launch_plan(config, "fake", [])
    with pytest.raises(KeyboardInterrupt), launched(config, plan, folder / "receipts", folder / "logs") as booted:
        server = booted.server.pid
        raise KeyboardInterrupt  # the caller's work, cut
    assert not process_alive(server) and not process_alive(child_pid(folder))


def test_quality_with_a_launched_profile_cut_exits_130_and_its_suite_says_interrupted(tmp_path):
    folder, _, env = make_dist(tmp_path, timeout=600)
    data = tmp_path / "gsm8k.jsonl"
    data.write_text(json.dumps({"question": "1 + 1?", "answer": "#### 2"}) + "\n")
    done = subprocess.run(
        [*FORKLIFT, "-c", folder, "quality", "--suite", "gsm8k", "--data", data, "--n", "1", "--profile", "fake"],
        env={**env, "FAKE_ENGINE_MODE": "healthy", INTERRUPT_ENV: "suite"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 130, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        "interrupted: forklift quality stopped by Ctrl-C; the engine was stopped; each finished suite's receipt"
        " is kept, the cut one's is marked interrupted"
    ]
    statuses = {r.kind: r.status for _, r in read_receipts([folder / "receipts"])}
    assert statuses == {"boot": "ok", "quality": "interrupted"}
    assert not process_alive(child_pid(folder))
