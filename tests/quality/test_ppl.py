"""Corpus pinning and the PPL suite's failure paths.

The NaN, infinity and HTTP-error windows are injected through a FAKE server
(tests/quality/fake_server.py): a real vLLM cannot be made to return them on demand.
The perplexity itself is checked against transformers on the real engine (test_engine.py).
"""

from __future__ import annotations

import hashlib
import math

import pytest

from forklift.config.load import parse_config
from forklift.errors import ConfigError, ForkliftError
from forklift.quality.corpus import corpus_from_config, inside, load_corpus, spans
from forklift.quality.endpoint import Endpoint
from forklift.quality.ppl import PplOptions, run_ppl
from tests.quality.fake_server import FakeServer, prompt_logprobs

TEXT = "alpha beta gamma delta " * 20  # 460 characters


def pinned(tmp_path, text=TEXT, name="corpus.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def config_text(path, sha, name="wiki"):
    return (
        '[upstream]\nsource = "path"\npath = "x"\nsha256 = "' + "0" * 64 + '"\n\n'
        f'[quality.corpora.{name}]\npath = "{path.name}"\nsha256 = "{sha}"\n'
    )


def test_a_corpus_edited_by_one_byte_is_refused_by_name(tmp_path):
    path, sha = pinned(tmp_path)
    config = parse_config(config_text(path, sha), tmp_path / "forklift.toml")
    assert corpus_from_config(config, "wiki").text == TEXT
    path.write_bytes(path.read_bytes()[:-1] + b"X")
    with pytest.raises(
        ForkliftError, match=r"quality.corpora.wiki: .*corpus.txt has sha256 [0-9a-f]{64}, pinned " + sha
    ):
        corpus_from_config(config, "wiki")
    with pytest.raises(ConfigError, match=r"--corpus 'code': not in \[quality.corpora\] .* \(known: wiki\)"):
        corpus_from_config(config, "code")


def test_corpus_config_is_checked_key_by_key(tmp_path):
    with pytest.raises(ConfigError, match=r"quality.corpora.wiki.sha256: String should match pattern"):
        parse_config(config_text(tmp_path / "c.txt", "abc"), tmp_path / "f.toml")
    with pytest.raises(ConfigError, match=r"quality.corpora.wiki.paht: unknown key"):
        parse_config(config_text(tmp_path / "c.txt", "0" * 64) + 'paht = "x"\n', tmp_path / "f.toml")


def test_jsonl_corpus_joins_documents_and_names_a_bad_line(tmp_path):
    path, sha = pinned(tmp_path, '{"text": "one"}\n{"text": "two"}\n', "docs.jsonl")
    assert load_corpus("docs", path, sha).text == "one\n\ntwo"
    path, sha = pinned(tmp_path, '{"text": "one"}\n{"body": "two"}\n', "docs.jsonl")
    with pytest.raises(ForkliftError, match=r"docs.jsonl:2: expected string keys 'text'"):
        load_corpus("docs", path, sha)


def test_windows_are_fixed_spans_and_engine_paths_are_found(tmp_path):
    assert spans(7, 3) == [(0, 3), (3, 6), (6, 7)]
    engine = tmp_path / "site" / "vllm"
    (engine / "sub").mkdir(parents=True)
    (engine / "sub" / "x.py").write_text("x")
    assert inside(engine / "sub" / "x.py", (engine,)) == engine
    assert inside(tmp_path / "elsewhere.txt", (engine,)) is None


def run_against(answer, tmp_path, size=200):
    path, sha = pinned(tmp_path)
    options = PplOptions(load_corpus("wiki", path, sha), size=size)
    with FakeServer(answer) as server:
        return run_ppl(Endpoint(server.url, "fake"), options), server


def test_scores_sum_logprobs_into_perplexity(tmp_path):
    body, server = run_against(lambda path, body: (200, prompt_logprobs([-1.0, -2.0, -3.0])), tmp_path)
    assert body.passed and len(server.requests) == 3  # 460 chars in windows of 200
    assert server.requests[0][1]["prompt_logprobs"] == 0 and server.requests[0][1]["max_tokens"] == 1
    assert body.summary["tokens"] == 9
    assert body.summary["perplexity"] == pytest.approx(math.exp(2.0))
    assert body.summary["bits_per_byte"] == pytest.approx(18 / math.log(2) / 460)
    assert [w["id"] for w in body.items] == ["wiki:0", "wiki:1", "wiki:2"]


def test_a_nan_window_fails_the_suite_naming_the_window(tmp_path):
    def answer(path, body):
        values = [-1.0, float("nan"), -2.0] if body["prompt"].startswith(TEXT[200:210]) else [-1.0, -1.0]
        return 200, prompt_logprobs(values)

    body, _ = run_against(answer, tmp_path)
    assert not body.passed and body.summary == {}
    assert body.failure == "window wiki:1 (chars 200..400): 1 NaN and 0 infinite logprobs of 3 tokens"
    assert body.items[1]["nan"] == 1


def test_an_infinite_logprob_fails_too(tmp_path):
    body, _ = run_against(lambda path, body: (200, prompt_logprobs([-1.0, float("-inf")])), tmp_path)
    assert body.failure == "window wiki:0 (chars 0..200): 0 NaN and 1 infinite logprobs of 2 tokens"


@pytest.mark.parametrize("status", [400, 500])
def test_an_http_error_fails_loudly_with_the_window(tmp_path, status):
    body, server = run_against(lambda path, body: (status, {"error": {"message": "prompt_logprobs broke"}}), tmp_path)
    assert not body.passed and len(server.requests) == 1
    assert body.failure.startswith(f"window wiki:0 (chars 0..200): HTTP {status}: ")
    assert "prompt_logprobs broke" in body.failure


def test_token_windows_send_the_servers_own_token_ids(tmp_path):
    def answer(path, body):
        if path == "/tokenize":
            assert body["add_special_tokens"] is False
            return 200, {"tokens": list(range(10))}
        return 200, prompt_logprobs([-1.0] * (len(body["prompt"]) - 1))

    path, sha = pinned(tmp_path)
    options = PplOptions(load_corpus("wiki", path, sha), unit="tokens", size=4)
    with FakeServer(answer) as server:
        body = run_ppl(Endpoint(server.url, "fake"), options)
    prompts = [request["prompt"] for route, request in server.requests if route == "/v1/completions"]
    assert prompts == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert body.passed and body.summary["tokens"] == 3 + 3 + 1 and body.summary["bits_per_byte"] is None
    assert [(w["start"], w["end"]) for w in body.items] == [(0, 4), (4, 8), (8, 10)]
