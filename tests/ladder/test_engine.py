"""`forklift ladder` on the real vLLM CPU build: the KV space the box cannot give fails with vLLM's own figures.

Engine boots: 3 (VLLM_CPU_KVCACHE_SPACE 1 and 2 GiB pass, 4096 GiB is refused by vLLM's CPU worker).
"""

import json
import os
import subprocess
import sys

import pytest

from forklift.receipts.store import read_receipts
from tests.fixtures.engine import distribution_toml, free_port, tiny_profile_toml

pytestmark = pytest.mark.engine


def test_ladder_finds_the_boundary_and_recommends_one_step_below(engine_python, tiny_model, tmp_path):
    (tmp_path / "forklift.toml").write_text(
        distribution_toml(tiny_profile_toml(engine_python, tiny_model, free_port()))
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "forklift",
            "ladder",
            "tiny",
            "--axis",
            "VLLM_CPU_KVCACHE_SPACE=4096,2,1",
            "--requests",
            "4",
            "--concurrency",
            "2",
            "--input",
            "16",
            "--output",
            "8",
            "--build",
            "example",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1500,
        # its own launch registry: a `forklift stop` of another run on this box must not stop these boots
        env={**os.environ, "COLUMNS": "200", "FORKLIFT_STATE_DIR": str(tmp_path / "state")},
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "highest pass: 2; recommended: 1 (one step below the highest pass)" in result.stdout
    receipts = [r for _, r in read_receipts([tmp_path / "receipts"])]
    (ladder,) = [r for r in receipts if r.kind == "ladder"]
    assert ladder.status == "ok" and ladder.build == "example"
    cells = {c["value"]: c for c in ladder.body["cells"]}
    assert [cells[v]["outcome"] for v in ("1", "2", "4096")] == ["pass", "pass", "boot-failed"]
    # vLLM's CPU worker states what there was and what was asked: the reason is its own figures
    assert cells["4096"]["reason"].startswith("died: ") and "GiB available, 4096.00 needed" in cells["4096"]["reason"]
    assert cells["2"]["kv_pool_tokens"] == 2 * cells["1"]["kv_pool_tokens"] > 0  # the pool follows the knob
    for value in ("1", "2"):
        cell = cells[value]
        assert (cell["requests"], cell["requests_ok"]) == (4, 4)
        assert 0.1 < cell["memory"]["engine_rss_gib"] < 64 and cell["memory"]["host_available_gib"] > 0
        assert cell["boot_seconds"] > 0
    # one receipt per cell, labelled with its setting; each boot's and burst's receipt beside it
    per_cell = {r.setting: r for r in receipts if r.kind == "ladder-cell"}
    assert set(per_cell) == {f"tiny VLLM_CPU_KVCACHE_SPACE={v}" for v in ("1", "2", "4096")}
    boots = {r.setting: r for r in receipts if r.kind == "boot"}
    assert boots["tiny VLLM_CPU_KVCACHE_SPACE=4096"].status == "failed"
    assert all(r.build == "example" for r in receipts)
    # the ladder and its cells name the engine as its boots recorded it (version, pin, overlay)
    engine = {(r.engine_version, r.overlay_hash, str(r.pin)) for r in receipts if r.kind == "boot"}
    assert len(engine) == 1 and next(iter(engine))[0]
    assert all(
        (r.engine_version, r.overlay_hash, str(r.pin)) in engine for r in receipts if r.kind.startswith("ladder")
    )
    assert len([r for r in receipts if r.kind == "ladder-burst"]) == 2
    report = subprocess.run(
        [sys.executable, "-m", "forklift", "report", "receipts", "-o", "report.md"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert report.returncode == 0, report.stdout + report.stderr
    text = (tmp_path / "report.md").read_text()
    assert "| 1 | pass (4/4 ok) |" in text and "| recommended |" in text
    assert "### VLLM_CPU_KVCACHE_SPACE on example / tiny (" in text
    assert json.loads(json.dumps(ladder.body))["recommended"] == "1"
