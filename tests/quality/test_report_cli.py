"""The report's quality and canary tables, and the CLI's refusals of bad input (no server needed)."""

from __future__ import annotations

import hashlib

from forklift.quality.schema import Question, SuiteBody
from forklift.receipts import new_receipt, write_receipt
from forklift.report import render_report
from tests.cli import forklift


def gsm8k_body(right: list[bool]) -> SuiteBody:
    items = [
        Question(id=f"line{i}", gold="4", strict="4" if r else "5", flexible="4" if r else "5",
                 correct_strict=r, correct_flexible=r).model_dump()
        for i, r in enumerate(right)
    ]  # fmt: skip
    n = len(right)
    return SuiteBody(
        suite="gsm8k",
        url="u",
        model="m",
        options={"n": n, "seed": 0, "shots": 0, "endpoint": "completions", "data_sha256": "a" * 64},
        passed=True,
        items=items,
        summary={"questions": n, "correct_strict": sum(right), "correct_flexible": sum(right)},
    )


def write(folder, kind, build, body):
    write_receipt(new_receipt(kind, engine_version=build, setting="tiny", body=body.model_dump()), folder)


def test_report_has_a_quality_and_a_canary_table_with_failures_shown(tmp_path):
    write(tmp_path, "quality", "0.32.0", gsm8k_body([True] * 8 + [False] * 2))
    write(tmp_path, "quality", "0.33.0", gsm8k_body([False] * 8 + [False] * 2))
    ok = SuiteBody(suite="tools", url="u", model="m", passed=True, items=[{"ok": True}] * 20)
    bad = SuiteBody(
        suite="tools", url="u", model="m", passed=False, failure="19/20 exact; request 7: HTTP 500: x",
        items=[{"ok": True}] * 19 + [{"ok": False}],
    )  # fmt: skip
    write(tmp_path, "canary", "0.32.0", ok)
    write(tmp_path, "canary", "0.33.0", bad)
    _, files = render_report(tmp_path, tmp_path / "report.md")
    text = files[0].read_text()
    quality = text[text.index("## Quality") : text.index("## Canaries")]
    assert "0.32.0 (old) → 0.33.0 (new)" in quality
    assert (
        "| gsm8k 0-shot n=10 completions | tiny | strict 8/10, flexible 8/10 | strict 0/10, flexible 0/10 |" in quality
    )
    assert "B worse (A-only right 8, B-only right 0; McNemar exact p=0.008)" in quality
    canaries = text[text.index("## Canaries") :]
    assert "| tools | tiny | PASS 20/20 | FAIL 19/20: 19/20 exact; request 7: HTTP 500: x | B regressed:" in canaries


def test_bad_input_is_one_line_and_exit_two(tmp_path):
    cases = [
        (["canary", "--suite", "tools"], "error: give one server: --url URL of a running server, or --profile NAME"),
        (["canary", "--url", "http://x:1", "--suite", "tool"], "error: --suite 'tool': not a suite of this command"),
        (["canary", "--url", "http://x:1", "--suite", "logscan"], "error: --suite logscan with --url needs --log FILE"),
        (["canary", "--url", "http://x:1", "--suite", "needle", "--depth", "2"], "error: needle --depth 2.0: expected a"),
        (["canary", "--url", "http://x:1", "--suite", "tools", "--repeats", "0"],
         "error: tools/json --repeats 0: must be at least 1"),
        (["canary", "--url", "http://x:1", "--suite", "cold-pair", "--context-tokens", "0"],
         "error: cold-pair --context-tokens 0: must be at least 1"),  # the suite asked for, not needle
        (["quality", "--url", "http://x:1", "--suite", "ppl"], "error: --suite ppl needs --corpus NAME"),
        (["quality", "--url", "http://x:1", "--suite", "gsm8k"], "error: --suite gsm8k needs --data FILE"),
        (["quality", "--url", "http://x:1", "--model", "m", "--suite", "gsm8k", "--data", "t.jsonl", "--shots", "-1"],
         "error: gsm8k --shots -1: must be at least 0"),
        (["quality", "--url", "http://x:1", "--model", "m", "--suite", "gsm8k", "--data", "t.jsonl", "--endpoint", "x"],
         "error: gsm8k --endpoint 'x': expected chat or completions"),
        (["canary", "--url", "http://x:1", "--model", "m", "--suite", "soak", "--soak-tokens", "0"],
         "error: soak --soak-tokens 0: must be at least 1"),
    ]  # fmt: skip
    for args, message in cases:
        result = forklift("-c", str(tmp_path), *args)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.startswith(message) and result.stderr.count("\n") == 1, result.stderr


def test_a_zero_window_is_refused_not_read_as_the_default(tmp_path):
    (tmp_path / "c.txt").write_text("text")
    (tmp_path / "forklift.toml").write_text(
        '[upstream]\nsource = "path"\npath = "x"\nsha256 = "' + "0" * 64 + '"\n\n'
        f'[quality.corpora.wiki]\npath = "c.txt"\nsha256 = "{hashlib.sha256(b"text").hexdigest()}"\n'
    )
    result = forklift("-c", str(tmp_path), "quality", "--url", "http://127.0.0.1:9", "--model", "m", "--suite", "ppl",
                      "--corpus", "wiki", "--window-chars", "0")  # fmt: skip
    assert result.returncode == 2 and result.stderr == "error: ppl --window-chars 0: must be at least 1\n"


def test_an_unreachable_server_is_one_line(tmp_path):
    result = forklift("canary", "--url", "http://127.0.0.1:9", "--model", "m", "--suite", "soak", "--requests", "1",
                      "--receipts", str(tmp_path))  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.startswith("error: http://127.0.0.1:9/v1/completions: ConnectError")
    (receipt,) = tmp_path.glob("*-canary-*.json")
    assert '"status": "failed"' in receipt.read_text()


def test_compare_of_suite_receipts_prints_their_table(tmp_path):
    write(tmp_path / "a", "quality", "0.32.0", gsm8k_body([True, False, True]))
    write(tmp_path / "b", "quality", "0.33.0", gsm8k_body([True, False, True]))
    result = forklift("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert result.returncode == 0, result.stderr
    assert "forklift compare: quality and canaries" in result.stdout
    assert "strict: no difference (A-only right 0, B-only right 0; McNemar exact p=1.000)" in result.stdout
