"""`forklift campaign --ray`: a campaign across a real local Ray cluster (tests.fixtures.ray_cluster).

Where only scheduling is under test (which node, which order, a node lost, Ctrl-C), the engine
is the FAKE of tests/campaign/fake_engine.py (a real vLLM boot is a minute of this box per cell);
one cell boots the real vLLM CPU build (marked engine).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forklift.receipts.store import read_receipts
from tests.fixtures.engine import distribution_toml, free_port
from tests.fixtures.ray_cluster import on_loopback

FAKE = Path(__file__).with_name("fake_engine.py")
CELL_S = 600  # a whole fake campaign on the slow shared box, at most

PROFILE = """
[profiles.tiny]
model = "/models/fake"
served_name = "tiny"
port = {port}
health_timeout = 120
defaults = {{ mode = "{first}" }}
"""

CAMPAIGN = """
order = "AB"
aa = {aa}
control = false
report = "report.md"
executor = "ray"
[builds.A]
command = ["{python}", "{fake}"]
[builds.B]
command = ["{python}", "{fake}"]
{boxes}
[[settings]]
profile = "tiny"
axes = {{ mode = {modes} }}
[[suites]]
kind = "bench"
cohort = "cohort.jsonl"
runs = 2
warmup = 0
"""

BOXES = {name: f"[boxes.{name}]\nresources = {{ {name} = 1 }}\n" for name in ("box_a", "box_b")}


def write_campaign(folder: Path, *, boxes: list[str], modes: list[str], aa: bool = False) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    axes = "".join(f'[profiles.tiny.axes.mode.{mode}.env]\nFAKE_MODE = "{mode}"\n' for mode in modes)
    (folder / "forklift.toml").write_text(distribution_toml(PROFILE.format(port=free_port(), first=modes[0]) + axes))
    prompts = [{"id": f"p{i}", "prompt": f"prompt {i}", "max_tokens": 8} for i in range(2)]
    (folder / "cohort.jsonl").write_text("".join(json.dumps(p) + "\n" for p in prompts))
    (folder / "campaign.toml").write_text(
        CAMPAIGN.format(
            aa=str(aa).lower(),
            python=sys.executable,
            fake=FAKE,
            boxes="".join(BOXES[b] for b in boxes),
            modes=json.dumps(modes),
        )
    )


def head(cluster, folder: Path, *args: str) -> list[str]:
    return on_loopback("forklift", "campaign", "campaign.toml", "--ray", cluster.address, *args)


def start_head(cluster, folder: Path) -> subprocess.Popen:
    """The head's campaign in the background, its output in one pipe (a test then waits on its event)."""
    return subprocess.Popen(
        head(cluster, folder),
        cwd=folder,
        env={**cluster.env, "COLUMNS": "250"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def run_head(cluster, folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        head(cluster, folder, *args),
        cwd=folder,
        env={**cluster.env, "COLUMNS": "250"},
        capture_output=True,
        text=True,
        timeout=CELL_S,
        check=False,
    )


def cells(folder: Path) -> list:
    return [r for _, r in read_receipts([folder / "receipts"]) if r.kind == "campaign-cell"]


def wait_for(path: Path, process: subprocess.Popen, deadline_s: float = CELL_S) -> None:
    """The event a cell writes (a file), or fail when the head exits first or the deadline passes."""
    deadline = time.monotonic() + deadline_s
    while not path.exists():
        if process.poll() is not None:
            pytest.fail(f"the campaign ended before {path.name} appeared: {process.stdout.read()}")
        assert time.monotonic() < deadline, f"no {path.name} after {deadline_s} s"
        time.sleep(0.2)


def engines_alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        state = (
            Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] if Path(f"/proc/{pid}").exists() else "X"
        )
        if state != "Z":
            alive.append(pid)
    return alive


def engine_pids(cluster) -> set[int]:
    folder = cluster.root / "engines"
    return {int(p.name.split("-")[1]) for p in folder.glob("engine-*")} if folder.is_dir() else set()


def test_every_box_runs_the_whole_plan_on_its_own_nodes_with_its_own_aa_control(ray_cluster, tmp_path):
    """Fake engine: 2 builds x 2 settings, A/A, on box_a (head, worker_a) and box_b (worker_b)."""
    write_campaign(tmp_path, boxes=["box_a", "box_b"], modes=["x", "y"], aa=True)
    done = run_head(ray_cluster, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    found = cells(tmp_path)
    assert len(found) == 12 and all(r.status == "ok" for r in found), [(r.body["key"], r.status) for r in found]
    for receipt in found:
        box = receipt.body["key"].split("-r1-")[0]
        node = receipt.body["node"]
        assert node["box"] == box and node["address"] == "127.0.0.1"
    by_box = {b: {r.body["node"]["id"] for r in found if r.body["node"]["box"] == b} for b in ("box_a", "box_b")}
    assert len(by_box["box_b"]) == 1 and not by_box["box_a"] & by_box["box_b"]  # box_b has one node, not box_a's
    for box in ("box_a", "box_b"):  # each box its own A/A pair per setting
        marks = sorted((r.setting, r.aa) for r in found if r.body["node"]["box"] == box and r.aa)
        assert marks == [("tiny mode=x", 1), ("tiny mode=x", 2), ("tiny mode=y", 1), ("tiny mode=y", 2)]
    benches = [r for _, r in read_receipts([tmp_path / "receipts"]) if r.kind == "bench"]
    assert len(benches) == 12
    assert "12 cells run, 0 finished before and skipped" in done.stdout
    assert (tmp_path / "report.md").is_file()
    # resumable as a local campaign is: nothing left to run
    again = run_head(ray_cluster, tmp_path)
    assert again.returncode == 0 and "0 cells run, 12 finished before and skipped" in again.stdout, again.stdout


def test_a_box_no_node_has_is_reported_not_run_in_one_line(ray_cluster, tmp_path):
    """Fake engine (never started): a box whose resource no node offers."""
    write_campaign(tmp_path, boxes=["box_a"], modes=["x"])
    text = (tmp_path / "campaign.toml").read_text().replace("resources = { box_a = 1 }", "resources = { box_z = 1 }")
    (tmp_path / "campaign.toml").write_text(text)
    done = run_head(ray_cluster, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "box_a-r1-tiny_mode=x-1-A: not run: no node with resource box_z (>= 1)" in done.stdout
    assert "0 cells run, 0 finished before and skipped" in done.stdout
    assert not cells(tmp_path)


def test_a_node_lost_mid_cell_is_set_aside_and_rerun_on_another_node_with_its_resources(ray_cluster, tmp_path):
    """Fake engine: worker_a's first engine holds mid-boot; worker_a is killed (every process, by pid); the cell
    reruns on the head (box_a too), what was received is kept aside, and the receipts match a serial run's shape."""
    write_campaign(tmp_path / "ray", boxes=["box_a"], modes=["x", "y"])
    engines = ray_cluster.root / "engines"
    engines.mkdir(exist_ok=True)
    (engines / "hold-worker_a").write_text("")
    process = start_head(ray_cluster, tmp_path / "ray")
    try:
        wait_for(engines / "held-worker_a", process)
        held, supervisor = (int(word) for word in (engines / "held-worker_a").read_text().split())
        os.kill(supervisor, signal.SIGKILL)  # the Ray worker running the cell: a box losing power leaves it no exit
        ray_cluster.kill("worker_a")
        orphaned = engines_alive([held])  # its engine has its own session: it outlives the node's processes
        out, _ = process.communicate(timeout=CELL_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, out
    assert "lost on node 127.0.0.1" in out and "unfinished cell moved aside to" in out, out
    assert orphaned == [held], out
    assert f"stopped an engine whose forklift died (pid {held}, " in out, out  # by its registry entry
    assert not engines_alive([held])
    aside = list((tmp_path / "ray" / "receipts.interrupted").iterdir())
    # what had arrived from the lost node (the boot's receipt, written as the boot began) is kept, not reported
    assert len(aside) == 1 and len(list(aside[0].glob("*-boot-*.json"))) == 1
    assert not list(aside[0].glob("*-campaign-cell-*.json"))
    lost_key = aside[0].name.rsplit("-", 1)[0]
    found = cells(tmp_path / "ray")
    assert len(found) == 4 and all(r.status == "ok" for r in found)
    rerun = next(r for r in found if r.body["key"] == lost_key)
    assert rerun.body["node"]["id"] != "" and rerun.body["node"]["box"] == "box_a"

    write_campaign(tmp_path / "serial", boxes=[], modes=["x", "y"])
    serial_file = tmp_path / "serial" / "campaign.toml"
    serial_file.write_text(serial_file.read_text().replace('executor = "ray"', 'executor = "local"'))
    serial = subprocess.run(
        [sys.executable, "-m", "forklift", "campaign", "campaign.toml"],
        cwd=tmp_path / "serial",
        env={**ray_cluster.env, "COLUMNS": "250"},
        capture_output=True,
        text=True,
        timeout=CELL_S,
        check=False,
    )
    assert serial.returncode == 0, serial.stdout + serial.stderr

    def shape(folder: Path) -> list[tuple]:
        rows = [(r.kind, r.build, r.setting, r.aa, r.status) for _, r in read_receipts([folder / "receipts"])]
        return sorted(row for row in rows if row[0] != "campaign-plan")

    def rows(folder: Path) -> list[list[str]]:  # setting and cell of each report row
        text = (folder / "report.md").read_text()
        return [line.split("|")[1:3] for line in text.splitlines() if line.startswith("| tiny")]

    assert shape(tmp_path / "ray") == shape(tmp_path / "serial")
    assert rows(tmp_path / "ray") == rows(tmp_path / "serial") and rows(tmp_path / "ray")


def test_ctrl_c_on_the_head_cancels_every_task_and_leaves_no_engine_running(ray_cluster, tmp_path):
    """Fake engine: engines hold mid-boot on every node; SIGINT to the head; every engine started is gone."""
    write_campaign(tmp_path, boxes=["box_a", "box_b"], modes=["x"])
    engines = ray_cluster.root / "engines"
    engines.mkdir(exist_ok=True)
    before = engine_pids(ray_cluster)
    for node in ray_cluster.nodes:
        if ray_cluster.nodes[node].poll() is None:
            (engines / f"hold-{node}").write_text("")
    process = start_head(ray_cluster, tmp_path)
    try:
        wait_for(engines / "held-worker_b", process)
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=CELL_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for leftover in engines.glob("hold-*"):
            leftover.unlink()
        for taken in engines.glob("held-*"):
            taken.unlink()
    assert process.returncode == 130, out
    assert "interrupted: 0 of 4 cells finished" in out
    started = sorted(engine_pids(ray_cluster) - before)
    assert started and not engines_alive(started), (started, out)
    assert not list((ray_cluster.root / "state").glob("*.json"))  # every registry entry gone with its engine


@pytest.mark.parametrize(
    "python, head_overlay, message",
    [
        (None, "sha256:" + "0" * 64, "build A: engine overlay None is not the head's sha256:000"),
        (sys.executable, None, "build A: /"),  # no engine in that interpreter: verify fails on the node
    ],
)
def test_a_node_whose_engine_is_not_the_heads_refuses_the_cell_in_one_line_naming_it(
    tmp_path, python, head_overlay, message
):
    """The node side alone (no cluster): what a node checks before a cell runs there."""
    from forklift.campaign.node import CellRequest, cell_on_node

    write_campaign(tmp_path, boxes=["box_a"], modes=["x"])
    if python:
        text = (tmp_path / "campaign.toml").read_text()
        (tmp_path / "campaign.toml").write_text(
            text.replace(f'[builds.A]\ncommand = ["{sys.executable}", "{FAKE}"]', f'[builds.A]\npython = "{python}"')
        )
    request = CellRequest(
        campaign=str(tmp_path / "campaign.toml"),
        key="box_a-r1-tiny_mode=x-1-A",
        repeats=1,
        version=None,
        overlay_hash=head_overlay,
        node={"id": "f" * 56, "address": "192.0.2.9", "box": "box_a"},
    )
    [refusal] = list(cell_on_node(request))
    assert refusal.kind == "refused"
    assert refusal.text.startswith("node 192.0.2.9 (ffffffffffff, ") and message in refusal.text, refusal.text
    assert not (tmp_path / "receipts").exists()  # nothing ran


@pytest.mark.engine
def test_a_real_vllm_cell_runs_on_the_node_its_box_names_verified_there(
    ray_cluster, engine_python, tiny_model, tmp_path
):
    """One cell of the real vLLM CPU build on worker_b (box_b): verified against the series on the node, booted
    with the positive control, benched, every receipt streamed back to the head's folder."""
    from tests.fixtures.engine import tiny_profile_toml

    (tmp_path / "forklift.toml").write_text(
        distribution_toml(tiny_profile_toml(engine_python, tiny_model, free_port()))
    )
    (tmp_path / "campaign.toml").write_text(
        f'order = "AB"\nreport = "report.md"\n[builds.A]\npython = "{engine_python}"\n'
        '[boxes.box_b]\nresources = { box_b = 1 }\n[[settings]]\nprofile = "tiny"\n'
        '[[suites]]\nkind = "bench"\nsynthetic = "16:16"\nprompts = 2\nruns = 2\nwarmup = 0\n'
    )
    done = run_head(ray_cluster, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    found = [r for _, r in read_receipts([tmp_path / "receipts"])]
    [cell] = [r for r in found if r.kind == "campaign-cell"]
    assert cell.status == "ok" and cell.body["node"]["box"] == "box_b", cell.body
    assert cell.body["control"].startswith("the engine warned about VLLM_FORKLIFT_CONTROL_")
    assert {r.kind for r in found} >= {"boot", "bench", "campaign-cell"}
    assert all(r.overlay_hash and r.overlay_hash.startswith("sha256:e6745a56") for r in found if r.kind == "bench")
    assert list((tmp_path / "logs").glob("*.log"))  # the engine's log came back too


def local_run(folder: Path, env: dict[str, str], code: str = "") -> subprocess.CompletedProcess:
    """`forklift campaign campaign.toml` here, then `code` in the same process (what it imported)."""
    program = f"import sys\nfrom forklift.cli import main\ntry:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n{code}"
    return subprocess.run(
        [sys.executable, "-c", program, "campaign", "campaign.toml"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=CELL_S,
        check=False,
    )


def test_a_local_campaign_runs_as_before_and_never_imports_ray(tmp_path):
    """Fake engine: the two cells of a local campaign, in this process's order; Ray is not imported."""
    write_campaign(tmp_path, boxes=[], modes=["x"])
    text = (tmp_path / "campaign.toml").read_text().replace('executor = "ray"\n', "")
    (tmp_path / "campaign.toml").write_text(text)
    env = {**os.environ, "FORKLIFT_STATE_DIR": str(tmp_path / "state"), "FAKE_ENGINE_PIDS": str(tmp_path / "pids")}
    done = local_run(tmp_path, env, "print('ray' in sys.modules, code)")
    assert done.stdout.strip().splitlines()[-1] == "False 0", done.stdout + done.stderr
    found = cells(tmp_path)
    assert sorted(r.body["key"] for r in found) == ["r1-tiny_mode=x-1-A", "r1-tiny_mode=x-2-B"]
    assert all("node" not in r.body for r in found)  # where a local cell ran is the receipt's fingerprint


@pytest.mark.parametrize(
    "change, address, message",
    [
        (("", ""), None, 'campaign.toml: executor = "ray": name the cluster with --ray ADDRESS or RAY_ADDRESS'),
        (('executor = "ray"\n', ""), None, "campaign.toml: boxes: name Ray nodes, so the campaign runs on a Ray"),
        (('order = "AB"', 'warmup_boots = 1\norder = "AB"'), "127.0.0.1:1", "warmup_boots: not on a Ray cluster yet"),
    ],
)
def test_a_ray_campaign_without_a_cluster_stops_in_one_line(tmp_path, change, address, message):
    """Refused before any cell runs (no cluster is reached, no engine started)."""
    write_campaign(tmp_path, boxes=["box_a"], modes=["x"])
    text = (tmp_path / "campaign.toml").read_text().replace(*change)
    (tmp_path / "campaign.toml").write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | ({"RAY_ADDRESS": address} if address else {})
    done = local_run(tmp_path, env)
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and message in line, done.stderr
