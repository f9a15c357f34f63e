"""Peer cross-check: the same workload through `forklift bench` and `vllm bench serve`, same vLLM CPU server.

Both clients send 64-token random-length-free prompts (vLLM's `random` dataset: random token ids; forklift:
synthetic text fitted to 64 tokens), 32 output tokens with ignore_eos, 32 requests at concurrency 4, and
each bench runs after a warm-up of its own. The medians of TTFT, TPOT, ITL and E2E and the output
throughput must agree within TOLERANCE. On this shared 2-core box two benches of one client differ by up to
~20% between minutes, so the tolerance is wide on purpose: it catches a definition that is off by a
factor (TTFT counted from the role chunk, TPOT over all tokens, ITL not divided), not a few percent.

Where the definitions differ (README, "Benchmarking"): vLLM's ITL is the gap between chunks; forklift
divides a gap across the tokens the chunk carried. So the ITL compared here is forklift's records read
vLLM's way (per chunk gap), and forklift's own ITL is checked to be that divided by tokens per chunk.
"""

from __future__ import annotations

import json
import statistics
import subprocess
from itertools import pairwise
from pathlib import Path

import pytest
from typer.testing import CliRunner

from forklift.bench.schema import BenchBody
from forklift.cli.app import app
from forklift.receipts import read_receipts

pytestmark = pytest.mark.engine

TOLERANCE = 0.35  # relative, on medians and throughput (see the docstring)
IN, OUT, N, C = 64, 32, 32, 4


def vllm_bench(engine_python: Path, url: str, model: str, tokenizer: Path, folder: Path, name: str) -> dict:
    argv = [
        str(engine_python), "-m", "vllm.entrypoints.cli.main", "bench", "serve", "--backend", "vllm",
        "--base-url", url, "--model", model, "--tokenizer", str(tokenizer), "--dataset-name", "random",
        "--random-input-len", str(IN), "--random-output-len", str(OUT), "--num-prompts", str(N),
        "--max-concurrency", str(C), "--ignore-eos", "--seed", "0", "--percentile-metrics", "ttft,tpot,itl,e2el",
        "--save-result", "--result-dir", str(folder), "--result-filename", name,
    ]  # fmt: skip
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=600, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((folder / name).read_text())


def forklift_bench(url: str, folder: Path) -> BenchBody:
    argv = ["bench", "--url", url, "--synthetic", f"{IN}:{OUT}", "--prompts", str(N), "--concurrency", str(C),
            "--salt-nonce", "peer-check", "--runs", "2", "--receipts", str(folder)]  # fmt: skip
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    [(_, receipt)] = read_receipts([folder])
    return BenchBody.model_validate(receipt.body)


def close(ours: float, theirs: float) -> bool:
    return abs(ours - theirs) <= TOLERANCE * max(ours, theirs)


def test_forklift_and_vllm_bench_serve_agree_on_one_server(vllm_server, engine_python, tiny_model, tmp_path):
    vllm_bench(engine_python, vllm_server.url, vllm_server.model, tiny_model, tmp_path, "warm.json")
    ours = forklift_bench(vllm_server.url, tmp_path / "forklift")
    theirs = vllm_bench(engine_python, vllm_server.url, vllm_server.model, tiny_model, tmp_path, "vllm.json")
    [cell] = ours.cells
    agg = cell.aggregate
    assert theirs["completed"] == N and agg["ok"] == N and agg["output_tokens"] == theirs["total_output_tokens"]
    kept = [r for r in cell.requests if r.run in cell.kept_runs]
    per_chunk_gaps = [now - prev for r in kept for (prev, _), (now, _) in pairwise(r.chunks)]
    pairs = {
        "TTFT": (agg["ttft_ms"]["median"], theirs["median_ttft_ms"]),
        "TPOT": (agg["tpot_ms"]["median"], theirs["median_tpot_ms"]),
        "ITL (per chunk)": (statistics.median(per_chunk_gaps) * 1000, theirs["median_itl_ms"]),
        "E2E": (agg["e2e_ms"]["median"], theirs["median_e2el_ms"]),
        "output tok/s": (agg["e2e_tok_s"], theirs["output_throughput"]),
    }
    off = {name: p for name, p in pairs.items() if not close(*p)}
    assert not off, f"forklift vs vllm bench serve beyond {TOLERANCE:.0%}: {off} (all: {pairs})"
    # forklift's own ITL divides each gap across the chunk's tokens: never above the per-chunk gap
    assert agg["itl_ms"]["median"] <= statistics.median(per_chunk_gaps) * 1000 * 1.001
    assert agg["tpot_ms"]["median"] > 0 and theirs["median_tpot_ms"] > 0  # decode timing measured by both
