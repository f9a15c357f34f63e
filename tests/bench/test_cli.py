"""`forklift bench` usage: every bad input is one line naming the culprit, exit 2."""

import json

import pytest
from typer.testing import CliRunner

from forklift.cli.app import app
from forklift.errors import UsageError
from tests.cli import forklift


@pytest.fixture
def cohort(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "a", "prompt": "x", "max_tokens": 4}) + "\n")
    return str(path)


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "give one server: --url URL of a running server, or --profile NAME"),
        (["--url", "U", "--profile", "p"], "give one server"),
        (["--url", "U", "--cohort", "{c}", "--set", "spec=off"], "--set needs --profile"),
        (["--url", "U"], "exactly one workload"),
        (["--url", "U", "--cohort", "{c}", "--synthetic", "4:4"], "exactly one workload"),
        (
            ["--url", "U", "--synthetic", "4x4"],
            "--synthetic '4x4': expected IN:OUT tokens, each a count or a range LOW-HIGH",
        ),
        (["--url", "U", "--cohort", "{c}", "--concurrency", "1,two"], "--concurrency '1,two'"),
        (["--url", "U", "--cohort", "{c}", "--concurrency", "0"], "every value must be >= 1"),
        (["--url", "U", "--cohort", "{c}", "--concurrency", ","], "--concurrency: give at least one level"),
        (["--url", "U", "--cohort", "{c}", "--concurrency", ""], "--concurrency: give at least one level"),
        (["--url", "127.0.0.1:9", "--cohort", "{c}"], "--url '127.0.0.1:9': expected http://HOST:PORT"),
        (["--url", "U", "--cohort", "{c}", "--warmup", "-1"], "--warmup -1"),
        (["--url", "U", "--cohort", "{c}", "--runs", "0"], "--runs 0"),
        (["--url", "U", "--cohort", "{c}", "--mode", "storm"], "--mode 'storm'"),
        (
            ["--url", "U", "--cohort", "{c}", "--mode", "batch", "--concurrency", "4"],
            "batch needs one --concurrency C and --requests N",
        ),
        (["--url", "U", "--cohort", "{c}", "--rate", "0"], "--rate 0"),
        (["--url", "U", "--cohort", "{c}", "--burstiness", "-1"], "--burstiness -1"),
        (["--url", "U", "--cohort", "{c}", "--requests", "0"], "--requests 0"),
        (["--url", "U", "--cohort", "{c}", "--timeout", "0"], "--timeout 0"),
        (["--url", "U", "--synthetic", "4:4", "--endpoint", "embeddings"], "--endpoint 'embeddings'"),
        (["--url", "U", "--cohort", "{c}", "--sampling", "hot"], "sampling preset 'hot'"),
    ],
)
def test_usage_errors(cohort, args, message):
    args = [{"U": "http://127.0.0.1:9", "{c}": cohort}.get(a, a) for a in args]
    result = CliRunner().invoke(app, ["bench", *args, "--model", "m"])
    assert isinstance(result.exception, UsageError), result.output
    assert message in str(result.exception)


def test_one_line_error_and_exit_code_from_the_real_entry_point(tmp_path):
    proc = forklift("bench", "--url", "http://127.0.0.1:9", timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: give exactly one workload: --cohort FILE.jsonl or --synthetic IN:OUT"
    ]


def test_unreachable_server_without_model_is_named(cohort):
    result = CliRunner().invoke(app, ["bench", "--url", "http://127.0.0.1:9", "--cohort", cohort])
    assert "http://127.0.0.1:9: cannot list models" in str(result.exception)
