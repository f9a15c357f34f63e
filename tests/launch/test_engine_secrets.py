"""Secrets given to a launch are written nowhere forklift writes: one real boot, bench, compare and report.

Planted: env and args secrets, through --set and through the profile in forklift.toml. Every file the
run left (receipts, logs, report, plots) and everything it printed is searched for the planted values.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.test_engine import cohort
from tests.fixtures.engine import free_port
from tests.fixtures.pypi import VLLM_032_UPSTREAM

pytestmark = pytest.mark.engine

SET_ENV = "sk-ant-planted-set-env-5f3a"
SET_ARG = "sk-planted-set-arg-81c2"
PROFILE_ENV = "hf_planted_profile_env_77d1"
PROFILE_ARG = "planted-profile-arg-0b9e"
PLANTED = (SET_ENV, SET_ARG, PROFILE_ENV, PROFILE_ARG)
# vLLM prints its own non-default arguments at boot, so a secret given as a flag reaches the engine's log
# in the engine's words; forklift's files and output must not hold any of them.
ENGINE_ECHOES = (SET_ARG, PROFILE_ARG)


def forklift(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FORKLIFT_STATE_DIR": str(tmp_path / "state")}
    return subprocess.run(
        [sys.executable, "-m", "forklift", "-c", str(tmp_path), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_planted_secrets_reach_no_file_and_no_output(engine_python, tiny_model, tmp_path):
    (tmp_path / "forklift.toml").write_text(
        f"""
{VLLM_032_UPSTREAM}
[profiles.tiny]
model = {json.dumps(str(tiny_model))}
served_name = "tiny"
port = {free_port()}
python = {json.dumps(str(engine_python))}
health_timeout = 300
args = {{ enforce-eager = true, hf-token = "{PROFILE_ARG}" }}
env = {{ HF_HUB_OFFLINE = "1", TRANSFORMERS_OFFLINE = "1", VLLM_CPU_KVCACHE_SPACE = "1", HF_TOKEN = "{PROFILE_ENV}" }}
"""
    )
    sets = ["--set", f"env.ANTHROPIC_API_KEY={SET_ENV}", "--set", f"args.api-key={SET_ARG}"]
    printed = forklift(tmp_path, "launch", "tiny", "--print", "--no-check", *sets)
    # the server requires the key: bench sends it (a 401 would fail every request)
    bench = forklift(
        tmp_path, "bench", "--profile", "tiny", *sets, "--cohort", str(cohort(tmp_path)), "--max-tokens", "4",
        "--runs", "1", "--warmup", "0",
    )  # fmt: skip
    assert bench.returncode == 0, bench.stdout + bench.stderr
    [receipt] = sorted((tmp_path / "receipts").glob("*-bench-*.json"))
    assert json.loads(receipt.read_text())["status"] == "ok"
    runs = [
        printed,
        bench,
        forklift(tmp_path, "compare", str(receipt), str(receipt)),
        forklift(tmp_path, "compare", str(receipt), str(receipt), "--json"),
        forklift(tmp_path, "report", str(tmp_path / "receipts"), "-o", str(tmp_path / "out" / "report.md")),
    ]
    for run in runs:
        assert run.returncode == 0, run.args
        for secret in PLANTED:
            assert secret not in run.stdout + run.stderr, (run.args, secret)
    setting = json.loads(receipt.read_text())["setting"]
    assert re.fullmatch(r"tiny api-key=<redacted> ANTHROPIC_API_KEY=<redacted>", setting), setting
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name not in ("forklift.toml", "cohort.jsonl")]
    assert any(p.suffix == ".log" for p in written) and any(p.name == "report.md" for p in written)
    for path in written:
        data = path.read_bytes()
        for secret in PLANTED:
            if path.suffix == ".log" and secret in ENGINE_ECHOES:
                continue
            assert secret.encode() not in data, (path, secret)
