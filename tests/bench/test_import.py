"""`forklift bench import`: vllm bench serve result files into bench receipts.

data/vllm-0.32.0-serve-detailed.json was written by vLLM 0.32.0's own `bench serve
--save-result --save-detailed` (6 chat prompts at concurrency 2 against the tiny CPU model).
"""

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from forklift.bench.importer import DETAIL, import_vllm_result
from forklift.cli.app import app
from forklift.errors import ForkliftError
from forklift.receipts import read_receipts

DETAILED = Path(__file__).parent / "data" / "vllm-0.32.0-serve-detailed.json"


def test_detailed_result_becomes_records_matching_vllm_summary():
    body = import_vllm_result(DETAILED)
    [cell] = body.cells
    raw = json.loads(DETAILED.read_text())
    assert body.mode == "import" and body.model == "tiny" and body.workload.endpoint == "chat"
    assert cell.name == "c2" and cell.concurrency == 2 and len(cell.requests) == raw["completed"]
    # our statistics recomputed from vLLM's per-request lists agree with vLLM's own summary
    for ours, theirs in (("ttft_ms", "ttft"), ("tpot_ms", "tpot"), ("e2e_ms", "e2el")):
        for stat in ("mean", "median"):
            key = f"{stat}_{theirs}_ms"
            if key in raw:
                assert cell.aggregate[ours][stat] == pytest.approx(raw[key], rel=1e-6), key
    assert cell.aggregate["output_tokens"] == raw["total_output_tokens"]
    assert all(r.chunk_tokens_from == "spread" and r.output_sha256 for r in cell.requests)
    assert cell.aggregate["vllm_reported"]["max_concurrency"] == 2


def test_summary_only_result_keeps_vllm_numbers(tmp_path):
    raw = json.loads(DETAILED.read_text())
    for key in (*DETAIL, "generated_texts"):
        raw.pop(key)
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(raw))
    [cell] = import_vllm_result(path).cells
    assert cell.requests == [] and cell.aggregate["vllm_reported"]["mean_ttft_ms"] == raw["mean_ttft_ms"]


def test_appended_results_become_cells_and_spec_decode_is_derived(tmp_path):
    raw = json.loads(DETAILED.read_text())
    second = {
        **raw,
        "max_concurrency": 4,
        "spec_decode_num_drafts": 10,
        "spec_decode_draft_tokens": 30,
        "spec_decode_accepted_tokens": 20,
    }
    path = tmp_path / "append.json"
    path.write_text(json.dumps(raw) + "\n" + json.dumps(second) + "\n")
    cells = import_vllm_result(path).cells
    assert [c.name for c in cells] == ["c2", "c4"]
    assert cells[1].metrics_delta["tok_per_step"] == pytest.approx(3.0)


@pytest.mark.parametrize(
    "text, message",
    [
        ("{nope", "append.json:1: not a readable result line"),
        ('{"duration": 1.0}', "not a `vllm bench serve --save-result` file \\(missing completed, model_id\\)"),
        ("", "empty result file"),
        (
            '{"duration": 1, "completed": 1, "model_id": "m", "start_times": [0], "ttfts": [], "itls": [], '
            '"latencies": [], "input_lens": [], "output_lens": [], "errors": []}',
            "unequal length",
        ),
    ],
)
def test_bad_result_files(tmp_path, text, message):
    path = tmp_path / "append.json"
    path.write_text(text)
    with pytest.raises(ForkliftError, match=message):
        import_vllm_result(path)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"duration": "abc"}, "duration_s: Input should be a valid number.*got 'abc'"),
        ({"ttfts": [None] * 6}, "TypeError: unsupported operand"),
        ({"max_concurrency": "two"}, "ValueError: invalid literal for int"),
    ],
)
def test_bad_values_in_a_result_file_are_named_not_a_traceback(tmp_path, change, message):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({**json.loads(DETAILED.read_text()), **change}))
    with pytest.raises(ForkliftError, match=f"^{path}: not a usable `vllm bench serve` result: {message}"):
        import_vllm_result(path)


def test_cli_import_writes_a_receipt(tmp_path):
    shutil.copy(DETAILED, tmp_path / "r.json")
    result = CliRunner().invoke(app, ["bench", "import", str(tmp_path / "r.json"), "--receipts", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    [(_, receipt)] = read_receipts([tmp_path / "out"])
    assert receipt.kind == "bench" and receipt.status == "ok" and receipt.body["source"].endswith("r.json")
    assert "TTFT ms median / p99" in result.output


def test_cli_import_missing_file(tmp_path):
    result = CliRunner().invoke(app, ["bench", "import", str(tmp_path / "none.json")])
    assert result.exit_code == 1 and "none.json: cannot read" in str(result.exception)
