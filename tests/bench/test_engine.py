"""`forklift bench` against the real vLLM CPU build (session servers from tests/fixtures/engine.py).

Request counts and lengths stay small: the whole suite runs on 2 cores in 25 minutes.
The tiny random model loops under greedy decoding, so n-gram drafts get accepted:
these tests prove the plumbing (counters move, tok/step is read from them), not a rate.
"""

import json
import subprocess
from itertools import pairwise
from pathlib import Path

import pytest
from typer.testing import CliRunner

from forklift.cli.app import app
from forklift.receipts import read_receipts
from forklift.workload import synthetic_workload
from tests.fixtures.pypi import VLLM_032_UPSTREAM

pytestmark = pytest.mark.engine

PROMPTS = [
    "The quick brown fox jumps over the lazy dog. The quick brown fox",
    "Question: what is two plus two? Answer: four. Question: what is two plus two?",
    "The cache holds keys and values; the cache holds keys and values; the cache",
]


def bench(tmp_path: Path, *args: str):
    folder = tmp_path / "receipts"
    result = CliRunner().invoke(app, ["bench", *args, "--receipts", str(folder)])
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    [(_, receipt)] = read_receipts([folder])
    return result.output, receipt


def cohort(tmp_path: Path) -> Path:
    path = tmp_path / "cohort.jsonl"
    lines = [{"id": f"q{i}", "messages": [{"role": "user", "content": text}]} for i, text in enumerate(PROMPTS)]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def check_spec_cell(cell: dict) -> None:
    m = cell["metrics_delta"]
    assert m["spec_drafts"] > 0 and m["spec_draft_tokens"] > 0, m
    assert m["tok_per_step"] == pytest.approx(1 + m["spec_accepted_tokens"] / m["spec_drafts"])
    assert m["tok_per_step"] > 1.0
    assert len(m["acceptance_per_position"]) == 3  # num_speculative_tokens
    assert sum(m["spec_accepted_per_pos"].values()) == pytest.approx(m["spec_accepted_tokens"])
    assert cell["cross_check"]["match"] is True, cell["cross_check"]
    assert m["prefix_cache_hits"] == 0  # salted
    # per request (vLLM's own summary of each answer) and server-wide, the same drafts: the sums agree exactly
    per = cell["aggregate"]["spec_per_request"]
    assert per["steps"] == m["spec_drafts"] and per["draft_tokens"] == m["spec_draft_tokens"]
    assert per["accepted_tokens"] == m["spec_accepted_tokens"]
    assert per["tok_per_step_min"] <= per["tok_per_step_mean"] <= per["tok_per_step_max"]
    if per["tok_per_step_ci95"]:
        low, high = per["tok_per_step_ci95"]
        assert low <= per["tok_per_step_mean"] <= high


def test_single_stream_cohort_with_ngram(vllm_server_ngram, tmp_path):
    out, receipt = bench(
        tmp_path,
        "--url",
        vllm_server_ngram.url,
        "--cohort",
        str(cohort(tmp_path)),
        "--max-tokens",
        "32",
        "--ignore-eos",
        "--sampling",
        "greedy",
        "--warmup",
        "0",
        "--runs",
        "1",
        "--label",
        "ngram-tiny",
    )
    assert receipt.status == "ok" and receipt.body["mode"] == "single"
    assert "tok/step (spec decode)" in out and "gen tokens server=client" in out
    # a --url bench says what it measured: the user's label, and the version the server states
    assert receipt.body["label"] == "ngram-tiny" and receipt.engine_version.startswith("0.32.0")
    [cell] = receipt.body["cells"]
    records = cell["requests"]
    assert [r["prompt_id"] for r in records] == ["q0", "q1", "q2"]
    assert all(r["completion_tokens"] == 32 and r["tokens_from"] == "usage" for r in records)
    assert all(r["chunk_tokens_from"] == "usage" and r["finish_reason"] == "length" for r in records)
    # speculative steps deliver several tokens per chunk; ITL spreads each gap over them
    assert any(n > 1 for r in records for _, n in r["chunks"])
    assert all(sum(n for _, n in r["chunks"]) == 32 for r in records)
    check_spec_cell(cell)
    assert receipt.body["server_info"]["block_size"] == "128"


def test_sweep_c1_c2_c4_synthetic_exact_lengths(vllm_server_ngram, tmp_path):
    output, receipt = bench(
        tmp_path,
        "--url",
        vllm_server_ngram.url,
        "--synthetic",
        "48:24",
        "--prompts",
        "4",
        "--endpoint",
        "chat",
        "--sampling",
        "greedy",
        "--concurrency",
        "1,2,4",
        "--runs",
        "1",
        "--slo",
        "e2e=600000,ttft=0.001",
    )
    assert receipt.status == "ok" and receipt.body["mode"] == "sweep"
    assert "goodput (within --slo)" in output
    capacity = receipt.body["slo_capacity"]  # no first token within a microsecond: every load misses it
    assert capacity["highest"] is None and [row["verdict"] for row in capacity["cells"]] == ["misses"] * 3
    assert "SLO (p99 within ttft 0.001 ms, e2e 600000 ms" in output
    cells = receipt.body["cells"]
    assert [c["name"] for c in cells] == ["c1", "c2", "c4"]
    for cell in cells:
        assert cell["kept_runs"] == [1] and len(cell["requests"]) == 8  # warm-up kept in the receipt
        assert all(r["prompt_tokens"] == 48 for r in cell["requests"])  # fitted with the server's tokenizer
        assert cell["aggregate"]["requests"] == 4 and cell["aggregate"]["output_tokens"] == 4 * 24
        # no first token comes within a microsecond: every request missed the TTFT bound, none is good
        assert cell["aggregate"]["goodput"]["good"] == 0 and cell["aggregate"]["goodput"]["share"] == 0.0
        agg = cell["aggregate"]
        if agg["tpot_ms"]:  # decode timing over the requests that were not delivered in one burst
            assert agg["per_stream_decode_tok_s"] == pytest.approx(1000 / agg["tpot_ms"]["median"])
            assert agg["aggregate_decode_tok_s"] == pytest.approx(cell["concurrency"] * agg["per_stream_decode_tok_s"])
        else:  # n-gram drafts on a loaded box can write a whole 24-token answer at once: no rate, never a zero one
            assert "aggregate_decode_tok_s" not in agg and "per_stream_decode_tok_s" not in agg
        check_spec_cell(cell)


def test_conversations_feed_answers_back_and_reuse_their_own_history_turn_by_turn(vllm_server, tmp_path):
    # 2 conversations x 3 turns of 40 filler words (about 160 tokens), answers of 8 tokens; block size 128 on CPU
    common = ["--url", vllm_server.url, "--conversations", "2", "--turns", "3", "--synthetic", "40:8"]
    output, receipt = bench(tmp_path / "alternating", *common, "--warmup", "0", "--runs", "1")
    assert receipt.status == "ok" and receipt.body["workload"]["prompts"] == 6
    (cell,) = receipt.body["cells"]
    records = cell["requests"]
    assert [(r["prompt_id"], r["turn"]) for r in records] == [
        (f"conv{c:03d}-t{t:02d}", t) for t in (1, 2, 3) for c in (0, 1)
    ]  # alternating: every conversation's turn 1, then every turn 2, ...
    for c in (0, 1):
        mine = [r for r in records if r["prompt_id"].startswith(f"conv{c:03d}")]
        # each turn's prompt holds the last one's prompt and answer, then a new user turn
        assert all(b["prompt_tokens"] > a["prompt_tokens"] + a["completion_tokens"] for a, b in pairwise(mine))
        assert mine[0]["prefix_hits"] == 0  # salted: a conversation starts cold
        assert mine[1]["prefix_hits"] >= 128 and mine[2]["prefix_hits"] > mine[1]["prefix_hits"]  # its history, cached
    turns = cell["aggregate"]["turns"]
    assert turns["1"]["reuse"] == 0.0 and 0 < turns["2"]["reuse"] < turns["3"]["reuse"] < 1
    assert sum(t["prefix_hits"] for t in turns.values()) == cell["metrics_delta"]["prefix_cache_hits"]
    assert "prefix reuse by turn" in output and "t1 0%" in output
    _, concurrent = bench(
        tmp_path / "concurrent", *common, "--interleave", "concurrent", "--warmup", "0", "--runs", "1"
    )
    (cell,) = concurrent.body["cells"]
    assert all(r["prefix_hits"] is None for r in cell["requests"])  # two in flight: one's hits are not told apart
    assert cell["metrics_delta"]["prefix_cache_hits"] >= 2 * 128 and cell["aggregate"]["turns"]["2"]["reuse"] is None


def test_drawn_lengths_are_exact_by_the_servers_own_count(vllm_server, tmp_path):
    args = ["--url", vllm_server.url, "--synthetic", "40-300:2-9", "--prompts", "8", "--warmup", "0", "--runs", "1"]
    _, receipt = bench(tmp_path, *args, "--seed", "5")
    drawn = {i.id: i for i in synthetic_workload(input_tokens=(40, 300), output_tokens=(2, 9), count=8, seed=5).items}
    records = receipt.body["cells"][0]["requests"]
    assert len({r["prompt_tokens"] for r in records}) > 4  # lengths spread over the range
    for record in records:  # each prompt as long as drawn, counted by the server's usage
        item = drawn[record["prompt_id"]]
        assert (record["prompt_tokens"], record["completion_tokens"]) == (item.synthetic_tokens, item.max_tokens)


def test_salted_misses_and_unsalted_repeat_hits_the_prefix_cache(vllm_server, tmp_path):
    # block size 128 on CPU: a prompt must be well over 128 tokens to hit
    common = ["--url", vllm_server.url, "--synthetic", "210:2", "--prompts", "2", "--warmup", "0", "--runs", "2"]
    _, salted = bench(tmp_path / "salted", *common)
    _, unsalted = bench(tmp_path / "unsalted", *common, "--no-salt")
    assert salted.body["cells"][0]["metrics_delta"]["prefix_cache_hits"] == 0
    assert unsalted.body["cells"][0]["metrics_delta"]["prefix_cache_hits"] >= 128
    assert salted.body["workload"]["hash"] == unsalted.body["workload"]["hash"]  # salt is not the workload
    assert salted.body["workload"]["salted"] and not unsalted.body["workload"]["salted"]


def test_vllm_bench_serve_results_import(vllm_server, engine_python, tiny_model, tmp_path):
    """Interop: vLLM's own benchmark client against the same server, its result file imported."""
    script = (
        "import argparse, sys\nfrom vllm.benchmarks.serve import add_cli_args, main\n"
        "p = argparse.ArgumentParser(); add_cli_args(p); main(p.parse_args())"
    )
    argv = [
        str(engine_python),
        "-c",
        script,
        "--backend",
        "openai-chat",
        "--base-url",
        vllm_server.url,
        "--endpoint",
        "/v1/chat/completions",
        "--model",
        vllm_server.model,
        "--tokenizer",
        str(tiny_model),
        "--dataset-name",
        "random",
        "--random-input-len",
        "16",
        "--random-output-len",
        "8",
        "--num-prompts",
        "4",
        "--max-concurrency",
        "2",
        "--ignore-eos",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        str(tmp_path),
        "--result-filename",
        "vllm.json",
    ]
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=300, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    _, receipt = bench(tmp_path, "import", str(tmp_path / "vllm.json"))
    [cell] = receipt.body["cells"]
    assert receipt.body["mode"] == "import" and cell["name"] == "c2" and len(cell["requests"]) == 4
    assert all(r["completion_tokens"] == 8 for r in cell["requests"])
    raw = json.loads((tmp_path / "vllm.json").read_text())
    assert cell["aggregate"]["ttft_ms"]["median"] == pytest.approx(raw["median_ttft_ms"], rel=1e-6)


def test_profile_launch_bench_stop(engine_python, tiny_model, tmp_path, monkeypatch):
    """`--profile`: forklift.launch boots the real engine, the bench runs, the engine is stopped."""
    import socket

    from tests.fixtures.engine import free_port

    port = free_port()
    monkeypatch.setenv("FORKLIFT_STATE_DIR", str(tmp_path / "state"))
    (tmp_path / "forklift.toml").write_text(
        f"""
{VLLM_032_UPSTREAM}
[profiles.tiny]
model = {json.dumps(str(tiny_model))}
served_name = "tiny"
host = "127.0.0.1"
port = {port}
python = {json.dumps(str(engine_python))}
health_timeout = 300
args = {{ enforce-eager = true }}
env = {{ HF_HUB_OFFLINE = "1", TRANSFORMERS_OFFLINE = "1", VLLM_CPU_KVCACHE_SPACE = "1" }}
"""
    )
    result = CliRunner().invoke(
        app, ["-c", str(tmp_path), "bench", "--profile", "tiny", "--cohort", str(cohort(tmp_path)), "--max-tokens", "8"]
    )
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    receipts = dict((r.kind, r) for _, r in read_receipts([tmp_path / "receipts"]))
    bench_receipt, boot_receipt = receipts["bench"], receipts["boot"]
    body = bench_receipt.body
    assert bench_receipt.status == "ok" and bench_receipt.profile["name"] == "tiny"
    assert bench_receipt.pin["version"] == "0.32.0" and bench_receipt.engine_version
    kv_pool = boot_receipt.body["facts"]["kv_pool_tokens"]
    assert kv_pool and body["boot"]["facts"]["kv_pool_tokens"] == kv_pool
    assert body["cells"][0]["aggregate"]["kv_pool_tokens"] == kv_pool
    assert bench_receipt.setting.startswith("tiny") and "setting" not in body and "KV pool tokens" in result.output
    with pytest.raises(OSError):  # stopped: nothing listens any more
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_bench_against_transformers_serve(transformers_server, tmp_path):
    """A second, different real server: usage only in the final chunk, no /metrics, no role-only
    quirks of vLLM's. The records must still be whole and the missing counters absent, not zero."""
    out, receipt = bench(
        tmp_path,
        "--url",
        transformers_server.url,
        "--model",
        transformers_server.model,
        "--cohort",
        str(cohort(tmp_path)),
        "--max-tokens",
        "8",
        "--sampling",
        "greedy",
    )
    assert receipt.status == "ok", out
    [cell] = receipt.body["cells"]
    records = cell["requests"]
    assert len(records) == 5 * len(PROMPTS)  # the default: one warm-up run, then four kept runs
    assert cell["kept_runs"] == [1, 2, 3, 4] and cell["aggregate"]["requests"] == 4 * len(PROMPTS)
    for record in records:
        assert record["status"] == 200 and record["error_kind"] is None
        assert record["completion_tokens"] == 8 and record["tokens_from"] == "usage"
        assert record["prompt_tokens"] > 0 and record["output_sha256"]
        assert record["send"] < record["first_token"] <= record["end"]
    assert "spec_drafts" not in cell["metrics_delta"]
    assert cell["cross_check"].get("match") is not True  # nothing to cross-check without server counters
