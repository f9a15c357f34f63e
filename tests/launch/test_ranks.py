"""Boot facts per rank of a tensor-parallel vLLM (issue 16), from recorded multi-rank log lines.

tests/launch/data/tp2-vllm-recorded.log: the two rank-assignment lines are as a TP=2 vLLM printed
them (vllm-project/vllm PR 37505; the "Worker pid=N" name comes before the parallel groups exist,
"Worker_TP<r>" after); the fact lines are vLLM 0.32.0's own format strings with the per-process
prefix of vllm/logger.py and values of the shape the single-GPU H200 run printed. A real TP=2
capture waits for the two-GPU machine kind (not lent for this work).
"""

from __future__ import annotations

from pathlib import Path

from forklift.engines.vllm import VLLM
from forklift.launch.bootlog import parse_boot_log

LOG = Path(__file__).with_name("data") / "tp2-vllm-recorded.log"


def facts():
    return parse_boot_log(LOG.read_text(encoding="utf-8").splitlines(), VLLM)


def test_each_rank_reports_its_own_memory():
    ranks = facts().ranks
    workers = [r for r in ranks if r.process.startswith("Worker")]
    assert [(r.process, r.pid, r.rank, r.tp_rank) for r in workers] == [
        ("Worker_TP0", 352531, 0, 0),
        ("Worker_TP1", 352572, 1, 1),
    ]
    assert [r.facts["kv_memory_gib"] for r in workers] == [126.82, 126.71]
    assert [r.facts["gpu_free_gib"] for r in workers] == [139.29, 139.18]
    assert [r.facts["model_load_gib"] for r in workers] == [0.98, 0.98]


def test_the_engine_core_states_the_pool_once_for_all_ranks():
    parsed = facts()
    [core] = [r for r in parsed.ranks if r.process == "EngineCore"]
    assert core.rank is None and core.facts["kv_pool_tokens"] == 8_311_552
    assert parsed.kv_pool_tokens == 8_311_552 and parsed.max_concurrency == 2029.19


def test_one_process_gives_no_per_rank_list():
    h200 = Path(__file__).with_name("data") / "h200-vllm-0.26.0-cuda-graphs.log"
    assert parse_boot_log(h200.read_text(encoding="utf-8").splitlines(), VLLM).ranks == []


def test_rank_timeouts_and_nccl_errors_are_fatal():
    lines = [
        "(Worker_TP1 pid=9) [rank1]:[E1201 10:00:00 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=212, OpType=ALLREDUCE) ran for 600012 milliseconds before timing out.",
        "(EngineCore_DP0 pid=7) ERROR 12-01 10:00:01 [core.py:900] TimeoutError: RPC call to execute_model timed out.",
    ]
    assert "Watchdog caught collective operation timeout" in parse_boot_log(lines[:1], VLLM).fatal
    assert parse_boot_log(lines[1:], VLLM).fatal.endswith("RPC call to execute_model timed out.")
