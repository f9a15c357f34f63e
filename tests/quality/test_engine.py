"""`forklift quality` against the real vLLM CPU server and the tiny model.

Known answers: the perplexity forklift reads from vLLM's prompt logprobs equals the one
transformers computes on the same weights and token ids; the same build against itself is
"no difference" by McNemar; a corpus inside the engine under test is refused for A/B.
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
from pathlib import Path

import httpx
import pytest

from forklift.installed.package import site_from_python
from tests.cli import forklift as run_forklift
from tests.fixtures.engine import distribution_toml, free_port, tiny_profile_toml
from tests.quality.test_gsm8k import TEST_SET

pytestmark = pytest.mark.engine

PROSE = (
    "The quick brown fox jumps over the lazy dog. A patched engine boots, serves and stops. "
    "Forklift carries patches across upstream releases and proves every step with receipts. "
    "Question: what is two plus two? Answer: four. The cache holds keys and values. "
) * 4  # 4 x 247 characters: windows of 300 characters cut it into 4


def corpus_entry(name: str, path: Path) -> str:
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    return f'[quality.corpora.{name}]\npath = "{path}"\nsha256 = "{sha}"\n'


@pytest.fixture(scope="module")
def dist(tmp_path_factory, engine_python, tiny_model):
    folder = tmp_path_factory.mktemp("quality-dist")
    (folder / "prose.txt").write_text(PROSE)
    engine_code = site_from_python(engine_python, "vllm") / "vllm" / "envs.py"  # a code corpus from the engine itself
    (folder / "forklift.toml").write_text(
        distribution_toml(tiny_profile_toml(engine_python, tiny_model, free_port()))
        + "\n"
        + corpus_entry("prose", folder / "prose.txt")
        + corpus_entry("engine-code", engine_code)
    )
    return folder


def forklift(dist: Path, *args: str) -> subprocess.CompletedProcess:
    return run_forklift("-c", dist, *args, env={"FORKLIFT_STATE_DIR": str(dist / "state")})


def receipt(folder: Path, suite: str) -> dict:
    found = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    (one,) = [r for r in found if r["body"].get("suite") == suite]
    return one


def test_perplexity_equals_transformers_on_the_same_token_ids(dist, vllm_server, engine_python, tiny_model, tmp_path):
    result = forklift(
        dist, "quality", "--url", vllm_server.url, "--suite", "ppl", "--corpus", "prose", "--window-chars", "300",
        "--receipts", str(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    body = receipt(tmp_path, "ppl")["body"]
    assert [w["id"] for w in body["items"]] == ["prose:0", "prose:1", "prose:2", "prose:3"]
    # The ids vLLM scored: each window's text as its tokenizer makes a prompt of it (BOS first).
    ids = [
        httpx.post(
            vllm_server.url + "/tokenize", json={"model": "tiny", "prompt": PROSE[w["start"] : w["end"]]}
        ).json()["tokens"]
        for w in body["items"]
    ]
    assert [w["tokens"] for w in body["items"]] == [len(t) - 1 for t in ids]
    reference = subprocess.run(
        [str(engine_python), str(Path(__file__).with_name("reference_ppl.py")), str(tiny_model), "float32"],
        input=json.dumps(ids),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    sums = json.loads(reference.stdout)
    expected = math.exp(-sum(sums) / sum(len(t) - 1 for t in ids))
    assert body["summary"]["perplexity"] == pytest.approx(expected, rel=1e-3)
    assert body["summary"]["bits_per_byte"] == pytest.approx(
        -sum(w["logprob_sum"] for w in body["items"]) / math.log(2) / len(PROSE.encode())
    )
    assert "perplexity" in result.stdout


def test_gsm8k_same_build_twice_is_no_difference(dist, vllm_server, tmp_path):
    if not TEST_SET.exists():
        pytest.skip(f"GSM8K test set not found at {TEST_SET}")
    common = ["quality", "--url", vllm_server.url, "--suite", "gsm8k", "--data", str(TEST_SET), "--n", "5"]
    common += ["--seed", "7", "--max-tokens", "24"]
    for side in ("a", "b"):
        result = forklift(dist, *common, "--receipts", str(tmp_path / side))
        assert result.returncode == 0, result.stderr
    body = receipt(tmp_path / "a", "gsm8k")["body"]
    assert len(body["items"]) == 5 and body["options"]["prompt"].endswith("Question: {question}\nAnswer:")
    assert {"strict", "flexible", "correct_strict", "correct_flexible", "gold"} <= set(body["items"][0])
    compared = forklift(dist, "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json")
    assert compared.returncode == 0, compared.stderr
    (row,) = json.loads(compared.stdout)["suites"]
    assert row["gsm8k"]["questions"] == 5
    assert row["gsm8k"]["strict"]["p_value"] == 1.0 and row["gsm8k"]["flexible"]["p_value"] == 1.0
    assert row["claim"] == "noise" and row["verdict"].startswith("strict: no difference")


def test_chat_zero_shot_runs_and_five_shot_overflow_fails_by_question(dist, vllm_server, tmp_path):
    if not TEST_SET.exists():
        pytest.skip(f"GSM8K test set not found at {TEST_SET}")
    common = ["quality", "--url", vllm_server.url, "--suite", "gsm8k", "--data", str(TEST_SET), "--n", "2"]
    common += ["--endpoint", "chat", "--max-tokens", "8"]
    zero = forklift(dist, *common, "--receipts", str(tmp_path / "zero"))
    assert zero.returncode == 0, zero.stderr
    assert len(json.loads(receipt(tmp_path / "zero", "gsm8k")["body"]["options"]["prompt"])) == 1
    five = forklift(dist, *common, "--shots", "5", "--receipts", str(tmp_path / "five"))
    body = receipt(tmp_path / "five", "gsm8k")["body"]
    messages = json.loads(body["options"]["prompt"])
    assert len(messages) == 11 and len(body["options"]["shot_ids"]) == 5
    # Five worked answers are ~2,370 tokens of the tiny model's tokenizer, over its 2,048: a loud failure by question.
    assert five.returncode == 1 and not body["passed"]
    assert body["failure"].startswith("question line") and "HTTP 400" in body["failure"]
    assert "maximum context length is 2048 tokens" in body["failure"]


def test_profile_run_flags_a_corpus_from_the_engine_and_compare_refuses_it(dist, tmp_path):
    result = forklift(
        dist, "quality", "--profile", "tiny", "--suite", "ppl", "--corpus", "engine-code", "--windows", "2",
        "--receipts", str(tmp_path), "--logs", str(tmp_path / "logs"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    r = receipt(tmp_path, "ppl")
    assert r["kind"] == "quality" and r["profile"]["name"] == "tiny" and r["engine_version"] == "0.32.0+cpu"
    assert r["body"]["boot"]["outcome"] == "ready" and r["setting"] == "tiny"
    assert r["body"]["options"]["inside_engine"].endswith("site-packages/vllm")
    refused = forklift(dist, "compare", str(tmp_path), str(tmp_path))
    assert refused.returncode == 1
    (line,) = refused.stderr.splitlines()
    assert line.startswith("error: not comparable: corpus engine-code (") and "envs.py) lies inside the engine" in line
    assert line.endswith("it changes with the pin, so it is no A/B number")
