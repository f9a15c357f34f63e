"""Pairing quality receipts: McNemar's exact test, the per-window PPL interval, canary pass counts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest, t

from forklift.errors import ForkliftError
from forklift.quality.schema import SuiteBody, Window
from forklift.receipts import new_receipt
from forklift.stats.quality import SuiteRun, compare_pair, compare_suites, mcnemar, mcnemar_verdict, ppl_change


def windows(values: list[float], tokens: int = 10) -> list[Window]:
    return [Window(id=f"c:{i}", start=i, end=i + 1, tokens=tokens, logprob_sum=v) for i, v in enumerate(values)]


def test_mcnemar_counts_discordant_pairs_and_tests_them_exactly():
    a = [True] * 10 + [True] * 7 + [False] * 1 + [False] * 2
    b = [True] * 10 + [False] * 7 + [True] * 1 + [False] * 2
    test = mcnemar(a, b)
    assert (test.both_right, test.a_only, test.b_only, test.neither) == (10, 7, 1, 2)
    assert test.p_value == pytest.approx(binomtest(1, 8, 0.5).pvalue) == pytest.approx(0.0703125)
    assert mcnemar_verdict(test)[0] == "noise"
    worse = mcnemar([True] * 9 + [False], [False] * 9 + [False])
    assert worse.p_value == pytest.approx(2 / 2**9) and mcnemar_verdict(worse)[0] == "worse"


def test_the_same_answers_are_no_difference_with_p_one():
    same = [True, False, True, True, False]
    test = mcnemar(same, same)
    assert test.discordant == 0 and test.p_value == 1.0
    claim, text = mcnemar_verdict(test)
    assert claim == "noise" and text == "no difference (A-only right 0, B-only right 0; McNemar exact p=1.000)"


def test_ppl_interval_holds_zero_for_noise_and_excludes_it_for_a_shift():
    noise = [-30.0 + 0.1 * ((i * 7) % 5 - 2) for i in range(40)]
    base = [-30.0 + 0.1 * ((i * 3) % 5 - 2) for i in range(40)]
    same = ppl_change(windows(base), windows(noise))
    assert same.low <= 0 <= same.high and not same.identical
    worse = ppl_change(windows(base), windows([v - 2.0 for v in base]))
    assert worse.ppl_a == pytest.approx(math.exp(3.0)) and worse.ppl_b == pytest.approx(math.exp(3.2))
    assert 0 < worse.low <= worse.delta <= worse.high
    exact = ppl_change(windows(base), windows(base))
    assert exact.identical and exact.delta == 0


def test_the_ppl_interval_is_the_ratio_estimators_t_interval_worked_by_hand():
    # two windows of 10 tokens: A sums -10 and -30 (PPL e^2), B -12 and -30 (PPL e^2.1)
    result = ppl_change(windows([-10.0, -30.0]), windows([-12.0, -30.0]))
    ppl_a, ppl_b = math.exp(2.0), math.exp(2.1)
    # each window's share of PPL: -PPL (lp_i - R tok_i) / sum(tok), R the mean logprob a token
    share_a = [-ppl_a * (lp + 2.0 * 10) / 20 for lp in (-10.0, -30.0)]
    share_b = [-ppl_b * (lp + 2.1 * 10) / 20 for lp in (-12.0, -30.0)]
    d = [sb - sa for sa, sb in zip(share_a, share_b, strict=False)]
    half = t.ppf(0.975, 1) * math.sqrt(2 / 1 * sum(x * x for x in d))
    assert result.delta == pytest.approx(ppl_b - ppl_a)
    assert (result.low, result.high) == pytest.approx((ppl_b - ppl_a - half, ppl_b - ppl_a + half))


def test_equal_builds_on_a_few_windows_read_as_a_difference_at_most_at_the_test_level():
    """Two builds of the same PPL (window scores exchangeable between A and B), 6 and 12 windows:
    a 95 % interval excludes zero in about 5 % of trials (tolerance: three binomial SE)."""
    trials = 400
    for n in (6, 12):
        rng = np.random.default_rng(n)
        named = 0
        for _ in range(trials):
            base = rng.uniform(-300, -200, n)
            result = ppl_change(windows(list(base + rng.normal(0, 5, n))), windows(list(base + rng.normal(0, 5, n))))
            named += not (result.low <= 0 <= result.high)
        assert named / trials <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / trials), (n, named)


def test_one_window_gives_no_interval_and_no_verdict():
    a, b = ppl_body([-30.0]), ppl_body([-32.0])
    row = compare_pair(run("quality", a), run("quality", b))
    assert row.ppl.low is None and row.ppl.high is None
    assert row.claim == "insufficient" and "too few windows for an interval" in row.verdict


def run(kind: str, body: SuiteBody, build: str = "0.32.0", name: str = "r") -> SuiteRun:
    receipt = new_receipt(kind, engine_version=build, body=body.model_dump())
    from pathlib import Path

    return SuiteRun(Path(f"{name}.json"), receipt, body)


def ppl_body(values: list[float], **options) -> SuiteBody:
    items = [w.model_dump() for w in windows(values)]
    record = {
        "corpus": {"name": "wiki", "sha256": "a" * 64, "path": "/c"},
        "unit": "chars",
        "size": 1200,
        "windows": None,
    }
    return SuiteBody(
        suite="ppl",
        url="u",
        model="m",
        options={**record, **options},
        passed=True,
        items=items,
        summary={"perplexity": 1.0, "bits_per_byte": None},
    )


def test_a_corpus_inside_the_engine_is_refused_for_ab():
    a = run("quality", ppl_body([-30.0] * 3))
    b = run("quality", ppl_body([-30.0] * 3, inside_engine="/venv/site-packages/vllm"), build="0.33.0")
    row = compare_pair(a, b)
    assert row.claim == "refused"
    assert "corpus wiki (/c) lies inside the engine under test (/venv/site-packages/vllm)" in row.verdict
    assert "changes with the pin" in row.verdict


def test_a_different_corpus_hash_is_refused_naming_the_field():
    a = run("quality", ppl_body([-30.0] * 3))
    b = run("quality", ppl_body([-30.0] * 3, corpus={"name": "wiki", "sha256": "b" * 64, "path": "/c"}))
    row = compare_pair(a, b)
    assert row.claim == "refused" and "options.corpus.sha256 differs" in row.verdict


def canary_body(passed: bool, failure: str | None = None) -> SuiteBody:
    items = [{"id": str(i), "ok": passed or i < 18} for i in range(20)]
    return SuiteBody(suite="tools", url="u", model="m", passed=passed, failure=failure, items=items)


def test_canary_rows_show_pass_counts_and_a_regression():
    a = run("canary", canary_body(True))
    b = run("canary", canary_body(False, "18/20 exact; request 18: HTTP 500: boom"), build="0.33.0")
    row = compare_pair(a, b)
    assert row.value_a == "PASS 20/20" and row.value_b.startswith("FAIL 18/20: 18/20 exact")
    assert row.claim == "worse" and row.verdict == "B regressed: 18/20 exact; request 18: HTTP 500: boom"


def test_a_failed_side_shows_its_failure_and_is_not_compared():
    failed = ppl_body([-30.0])
    failed.passed, failed.failure, failed.summary = False, "window wiki:0 (chars 0..1200): 1 NaN", {}
    row = compare_pair(run("quality", ppl_body([-30.0])), run("quality", failed))
    assert row.value_b == "FAILED: window wiki:0 (chars 0..1200): 1 NaN"
    assert row.verdict == "not compared: B failed"


def test_suites_only_one_side_ran_are_listed_not_compared():
    rows, alone = compare_suites([run("canary", canary_body(True))], [run("quality", ppl_body([-1.0]))])
    assert rows == [] and alone == ["B only: ppl wiki on " + rows_host(), "A only: tools on " + rows_host()]


def rows_host() -> str:
    import socket

    return socket.gethostname()


def test_no_shared_window_is_an_error():
    with pytest.raises(ForkliftError, match="no window is scored by both sides"):
        ppl_change(windows([-1.0]), [Window(id="other:0", start=0, end=1, tokens=1, logprob_sum=-1.0)])
