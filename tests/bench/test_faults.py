"""Faults, each against the fake SSE server (a FAKE: a real vLLM cannot be told to fail on cue).

Every test checks the same promise: each failure is recorded with its kind, the bench
ends cleanly, and the receipt on disk holds every completed record and its status.
"""

import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from forklift.bench.runner import BenchPlan, cell_specs
from forklift.bench.session import discover_model, record_bench
from forklift.errors import ForkliftError
from forklift.receipts import read_receipts
from forklift.workload import load_cohort
from tests.cli import FORKLIFT
from tests.fixtures.sse import Plan


def cohort(tmp_path: Path, n: int = 6) -> Path:
    path = tmp_path / "cohort.jsonl"
    lines = [json.dumps({"id": f"p{i}", "prompt": f"prompt {i}", "max_tokens": 8}) for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


def run(tmp_path, url, *, n=6, concurrency=2, timeout=10.0, runs=1, warmup=0):
    plan = BenchPlan(
        url=url,
        model="fake-sse",
        workload=load_cohort(cohort(tmp_path, n)),
        cells=cell_specs("batch", [concurrency], n, None, 1.0),
        runs=runs,
        warmup=warmup,
        timeout=timeout,
    )
    outcome = record_bench(plan, mode="batch", folder=tmp_path / "receipts")
    [(_, receipt)] = read_receipts([outcome.path])
    assert receipt.status == outcome.status
    return receipt, receipt.body["cells"][0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def kinds(cell):
    return [r["error_kind"] for r in cell["requests"]]


def test_connection_refused(tmp_path):
    receipt, cell = run(tmp_path, f"http://127.0.0.1:{free_port()}")
    assert receipt.status == "failed"
    assert set(kinds(cell)) == {"connect"} and 1 <= len(kinds(cell)) <= 2  # stops once unreachable
    assert cell["complete"] is False and "cannot connect" in cell["requests"][0]["error"]


def test_http_500_on_some_requests(tmp_path, sse_server):
    sse_server.plan = lambda i, body: Plan(status=500 if i % 3 == 1 else 200)
    receipt, cell = run(tmp_path, sse_server.url)
    assert receipt.status == "partial"
    assert kinds(cell).count("http") == 2 and kinds(cell).count(None) == 4
    failed = [r for r in cell["requests"] if r["error_kind"]]
    assert all(r["status"] == 500 and "HTTP 500" in r["error"] for r in failed)
    assert cell["aggregate"]["failures"] == {"http": 2} and cell["aggregate"]["ok"] == 4
    assert cell["aggregate"]["output_tokens"] == 4 * 8


def test_stream_cut_midway(tmp_path, sse_server):
    sse_server.plan = lambda i, body: Plan(cut_after=3 if i == 0 else None)
    receipt, cell = run(tmp_path, sse_server.url, concurrency=1)
    cut = [r for r in cell["requests"] if r["error_kind"]]
    assert [r["error_kind"] for r in cut] == ["stream_cut"]
    assert len(cut[0]["chunks"]) == 3 and cut[0]["completion_tokens"] == 3  # what did arrive is kept
    assert receipt.status == "partial" and cell["aggregate"]["ok"] == 5


def test_request_timeout(tmp_path, sse_server):
    """The hanging request never answers, so it times out whatever the limit; the limit is 5 s (not 0.5 s)
    so that the five that do answer are never cut on a loaded box."""
    sse_server.plan = lambda i, body: Plan(hang=i == 2)
    receipt, cell = run(tmp_path, sse_server.url, timeout=5.0)
    assert kinds(cell).count("timeout") == 1 and kinds(cell).count(None) == 5
    assert receipt.status == "partial"


def test_server_dies_mid_run(tmp_path, sse_server):
    def plan(i, body):
        if i == 4:  # the fifth request kills the server while two streams are in flight
            threading.Thread(target=sse_server.kill).start()
        return Plan(delay=0.02)

    sse_server.plan = plan
    receipt, cell = run(tmp_path, sse_server.url, n=20)
    assert receipt.status == "partial" and cell["complete"] is False
    ok = [r for r in cell["requests"] if r["error_kind"] is None]
    assert 2 <= len(ok) <= 4
    assert "server_gone" in kinds(cell)
    assert len(cell["requests"]) < 20  # it stopped sending instead of failing the rest one by one


def records_on_disk(folder: Path) -> int:
    """Request records in the growing receipt as it stands on disk (written atomically: never half a file)."""
    found = list(folder.glob("*.json"))
    return sum(len(c["requests"]) for c in json.loads(found[0].read_text())["body"]["cells"]) if found else 0


def test_ctrl_c_mid_run_keeps_every_completed_record(tmp_path, sse_server):
    """The server answers (slowly, so records keep arriving) until the receipt on disk holds three records,
    and hangs every request after that: the run cannot finish before SIGINT however slow the box is, and the
    recorder's rewrite spacing (0.5 s, or 20 times the last rewrite's cost) cannot starve the disk of records.
    The test waits on the receipt growing, never on the clock."""
    folder = tmp_path / "receipts"
    sse_server.plan = lambda i, body: (
        Plan(hang=True) if records_on_disk(folder) >= 3 else Plan(delay=0.03 if i < 3 else 2.0, chunks=1)
    )
    argv = [
        *FORKLIFT,
        "bench",
        "--url",
        sse_server.url,
        "--cohort",
        str(cohort(tmp_path, 40)),
        "--concurrency",
        "2",
        "--mode",
        "sweep",
        "--receipts",
        str(folder),
    ]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        deadline = time.monotonic() + 300  # a ceiling only: the event is the receipt on disk
        done = 0
        while done < 3 and time.monotonic() < deadline:  # the receipt grows on disk while it runs
            time.sleep(0.1)
            done = records_on_disk(folder)
        assert done >= 3, "the receipt did not grow while the bench ran"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    [(_, receipt)] = read_receipts([folder])
    assert receipt.status == "interrupted"
    records = receipt.body["cells"][0]["requests"]
    ok = [r for r in records if r["error_kind"] is None]
    assert len(ok) >= done and all(r["end"] is not None for r in ok)
    assert {r["error_kind"] for r in records} <= {None, "interrupted"}
    assert len(records) < 40
    assert "receipt:" in out and "(interrupted)" in out
    assert err.strip().splitlines()[-1].startswith("interrupted: forklift bench stopped by Ctrl-C; every completed")


def test_bench_ok_receipt_keeps_warmup_records(tmp_path, sse_server):
    receipt, cell = run(tmp_path, sse_server.url, runs=1, warmup=1)
    assert receipt.status == "ok" and cell["kept_runs"] == [1]
    assert [r["run"] for r in cell["requests"]].count(0) == 6  # the warm-up stays in the receipt
    assert cell["aggregate"]["requests"] == 6  # but statistics use the kept run only
    assert cell["metrics_delta"] == {} and cell["cross_check"] == {}  # no /metrics: absent, never zero


@pytest.mark.parametrize(
    "event", [b"[1,2]", b'{"choices": [null]}', b'{"choices": [{"delta": "x"}]}', b'{"usage": [1]}']
)
def test_a_malformed_stream_event_fails_that_request_only(tmp_path, sse_server, event):
    sse_server.plan = lambda i, body: Plan(events=(event, b"[DONE]")) if i == 1 else Plan()
    receipt, cell = run(tmp_path, sse_server.url, concurrency=1)
    assert receipt.status == "partial" and cell["complete"] is True
    assert kinds(cell) == [None, "protocol", None, None, None, None]
    assert event.decode() in cell["requests"][1]["error"]


@pytest.mark.parametrize("listing", [[1, 2], {"data": [None]}, {"data": "tiny"}, {"data": [{"name": "tiny"}]}])
def test_a_model_list_of_the_wrong_shape_is_named(sse_server, listing):
    sse_server.models = listing
    with pytest.raises(ForkliftError, match=f"^{sse_server.url}/v1/models is not an OpenAI model list"):
        discover_model(sse_server.url)
