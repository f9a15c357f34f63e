"""compare and report on real bench receipts from the vLLM CPU build (session servers of tests/fixtures/engine.py).

Small on purpose (6 prompts x 24 tokens, one warm-up run): the whole suite has 25 minutes on 2 cores.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from forklift.cli.app import app
from forklift.receipts import read_receipts
from forklift.report import load_campaign, render_report
from forklift.stats import bench_runs, compare_groups

pytestmark = pytest.mark.engine

PROMPTS = [
    "The quick brown fox jumps over the lazy dog. The quick brown fox",
    "Question: what is two plus two? Answer: four. Question: what is two plus two?",
    "The cache holds keys and values; the cache holds keys and values; the cache",
    "One, two, three, four, five, six, seven, eight, nine, ten, one, two, three,",
    "Red green blue, red green blue, red green blue, red green",
    "A patch series carried across releases is a patch series carried across",
]


def cohort(folder: Path) -> Path:
    path = folder / "cohort.jsonl"
    lines = [{"id": f"q{i}", "messages": [{"role": "user", "content": text}]} for i, text in enumerate(PROMPTS)]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def bench(url: str, cohort_path: Path, folder: Path, setting: str) -> Path:
    """One real `forklift bench`: greedy, fixed length, a warm-up run dropped; returns its receipt's path."""
    before = set(folder.glob("*.json")) if folder.exists() else set()
    result = CliRunner().invoke(app, [
        "bench", "--url", url, "--cohort", str(cohort_path), "--max-tokens", "24", "--ignore-eos",
        "--sampling", "greedy", "--runs", "2", "--receipts", str(folder),
    ])
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    [path] = set(folder.glob("*.json")) - before
    receipt = json.loads(path.read_text())
    receipt["body"]["setting"] = setting  # launched by the fixture, not by --profile: label it as a profile would
    path.write_text(json.dumps(receipt))
    return path


@pytest.fixture(scope="module")
def receipts(vllm_server, vllm_server_ngram, tmp_path_factory):
    folder = tmp_path_factory.mktemp("campaign")
    prompts = cohort(folder.parent)
    paths = {
        "plain-1": bench(vllm_server.url, prompts, folder / "plain", "plain"),
        "plain-2": bench(vllm_server.url, prompts, folder / "plain-again", "plain"),
        "ngram": bench(vllm_server_ngram.url, prompts, folder / "ngram", "ngram"),
    }
    for server in (vllm_server, vllm_server_ngram):
        shutil.copy(server.receipt_path, folder / "boots" / server.receipt_path.name) if (
            (folder / "boots").mkdir(exist_ok=True) or True) else None
    return folder, paths


def runs(path: Path):
    return bench_runs(read_receipts([path]))


def test_two_runs_of_one_profile_compare_within_noise(receipts):
    _, paths = receipts
    [cell] = compare_groups(runs(paths["plain-1"]), runs(paths["plain-2"])).cells
    assert cell.paired and cell.pairs == len(PROMPTS)
    for key in ("decode_tps", "tpot", "e2e"):
        assert cell.metric(key).claim == "noise", cell.metric(key)
    assert cell.metric("output_tokens").estimate.change == 0  # ignore_eos: 24 tokens each
    # greedy on one server: the same text every time, across runs and across benches
    assert cell.divergence.assessed and cell.divergence.diverged == [] and cell.divergence.compared == len(PROMPTS)
    assert cell.determinism_a.summary == f"deterministic: {len(PROMPTS)} prompts wrote the same text in all 2 runs"


def test_ngram_against_plain_shows_the_tok_step_difference(receipts):
    _, paths = receipts
    [cell] = compare_groups(runs(paths["plain-1"]), runs(paths["ngram"])).cells
    assert cell.server_tok_step_a is None and cell.server_tok_step_b > 1.0
    tok_chunk = cell.metric("tok_chunk")  # per request: each streamed chunk is one engine step
    assert tok_chunk.a == pytest.approx(1.0) and tok_chunk.b > 1.0
    assert tok_chunk.claim == "better" and tok_chunk.verdict.startswith("B higher by")
    assert tok_chunk.b == pytest.approx(cell.server_tok_step_b, rel=0.25)


def test_compare_and_report_command_lines_on_real_receipts(receipts):
    folder, paths = receipts
    env = {**os.environ, "COLUMNS": "220"}
    done = subprocess.run([sys.executable, "-c", "from forklift.cli import main; main()", "compare",
                           str(paths["plain-1"]), str(paths["ngram"])], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "tok/chunk" in done.stdout and "95% CI" in done.stdout and "MDE" in done.stdout
    assert "server tok/step (counter delta, no interval): A –, B " in done.stdout
    assert "prompts wrote the same text on both sides" in done.stdout or "prompts diverged" in done.stdout
    out = folder / "report" / "report.md"
    render_report(folder, out, baseline="plain")
    text = out.read_text()
    assert "### plain (A) → ngram (B), build" in text and "| ready |" in text
    campaign = load_campaign(folder, baseline="plain")
    assert campaign.rows and all(row.old.pool is not None for row in campaign.rows)
