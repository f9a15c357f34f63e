"""Compare quality and canary receipts, item by item: PPL windows, GSM8K questions, canary passes.

- ppl: windows are paired by id; corpus perplexity is a ratio of sums (logprob over tokens),
  and the difference B - A gets a Student's t interval over windows whose standard error is
  the ratio estimator's linearisation: each window's first-order share of the difference,
  so the pairing (the same windows on both sides) is in it. "no difference" when the
  interval holds zero; one window gives no interval. Not a bootstrap: with the few windows
  a quick run scores, a percentile bootstrap named a difference between two equal builds in
  14 % of trials at 6 windows and 11 % at 12 (5 % nominal); this interval, 4 % and 5 %
  (tests/quality/test_compare.py).
- gsm8k: questions are paired by id; McNemar's exact test on the discordant pairs (A right
  and B wrong, A wrong and B right): under "no difference" each discordant question is a
  fair coin, so p = two-sided binomial test of the smaller count among all discordant ones.
- canaries: pass counts per side; B regressed when A passed and B did not.

A side that failed shows its failure; receipts that measured different things (corpus
sha256, windows, subset, shots) are refused with one line naming the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel
from scipy import stats

from forklift.errors import ForkliftError
from forklift.quality.schema import Question, SuiteBody, Window
from forklift.receipts import Receipt, read_receipts
from forklift.stats.interval import LEVEL
from forklift.stats.runs import ReceiptRun, validated_runs

KINDS = ("quality", "canary")
Claim = Literal["better", "worse", "noise", "identical", "failed", "refused", "insufficient"]

# Options that must match before two receipts of a suite measure the same thing.
MUST_MATCH = {
    "ppl": ("corpus.sha256", "corpus.name", "unit", "size", "windows"),
    "gsm8k": ("data_sha256", "n", "seed", "shots", "endpoint", "max_tokens", "prompt"),
}


class SuiteRun(ReceiptRun[SuiteBody]):
    """One quality or canary receipt with its body validated."""

    @property
    def label(self) -> str:
        """What was measured, for a row: `ppl wiki`, `gsm8k 5-shot n=50`, `tools`."""
        options = self.body.options
        if self.body.suite == "ppl":
            return f"ppl {(options.get('corpus') or {}).get('name', '?')}"
        if self.body.suite == "gsm8k":
            return f"gsm8k {options.get('shots', 0)}-shot n={options.get('n')} {options.get('endpoint', '')}".rstrip()
        return self.body.suite

    def option(self, dotted: str) -> Any:
        value: Any = self.body.options
        for part in dotted.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value


def suite_runs(receipts: list[tuple[Path, Receipt]]) -> list[SuiteRun]:
    """The quality and canary receipts among `receipts`, bodies validated, oldest first."""
    return validated_runs(receipts, KINDS, SuiteRun, SuiteBody)


class PplResult(BaseModel):
    windows: int
    ppl_a: float
    ppl_b: float
    delta: float  # B - A
    low: float | None  # None: fewer than two windows, no interval
    high: float | None
    standard_error: float | None = None  # of delta, over windows (None: one window)
    identical: bool  # every window's summed logprob equal on both sides


class McNemar(BaseModel):
    both_right: int
    a_only: int  # A right, B wrong
    b_only: int  # A wrong, B right
    neither: int
    p_value: float

    @property
    def discordant(self) -> int:
        return self.a_only + self.b_only


class Gsm8kResult(BaseModel):
    questions: int
    accuracy_a: dict[str, float]  # strict, flexible
    accuracy_b: dict[str, float]
    strict: McNemar
    flexible: McNemar


class SuiteComparison(BaseModel):
    suite: str
    label: str
    setting_a: str
    setting_b: str
    build_a: str
    build_b: str
    host_a: str
    host_b: str
    path_a: str
    path_b: str
    value_a: str  # the side's headline number, or its failure
    value_b: str
    claim: Claim
    verdict: str
    ppl: PplResult | None = None
    gsm8k: Gsm8kResult | None = None


def headline(run: SuiteRun) -> str:
    """A side's number in a table cell; a failed side shows why, never a blank."""
    body, summary = run.body, run.body.summary
    if body.passed is None:
        return f"{run.receipt.status} (no verdict)"
    if body.suite == "ppl":
        if not body.passed:
            return f"FAILED: {body.failure}"
        bpb = summary.get("bits_per_byte")
        return f"{summary['perplexity']:.3f}" + (f" ({bpb:.3f} bits/byte)" if bpb is not None else "")
    if body.suite == "gsm8k":
        if not body.passed:
            return f"FAILED: {body.failure}"
        return (
            f"strict {summary['correct_strict']}/{summary['questions']}, "
            f"flexible {summary['correct_flexible']}/{summary['questions']}"
        )
    passes = sum(bool(item.get("ok")) for item in body.items)
    count = f"{passes}/{len(body.items)}" if body.suite != "logscan" else f"{sum(body.summary.values())} hits"
    return f"PASS {count}" if body.passed else f"FAIL {count}: {body.failure}"


def _check_comparable(a: SuiteRun, b: SuiteRun) -> None:
    for field in MUST_MATCH.get(a.body.suite, ()):
        if a.option(field) != b.option(field):
            raise ForkliftError(
                f"not comparable: {a.body.suite} options.{field} differs: "
                f"{a.option(field)!r} in {a.path} vs {b.option(field)!r} in {b.path}"
            )
    for run in (a, b):
        inside = run.option("inside_engine")
        if inside:
            raise ForkliftError(
                f"not comparable: corpus {run.option('corpus.name')} ({run.option('corpus.path')}) lies inside the "
                f"engine under test ({inside}) in {run.path}: it changes with the pin, so it is no A/B number"
            )


def ppl_change(a: list[Window], b: list[Window]) -> PplResult:
    """Corpus PPL of each side over the windows both scored, and a 95 % interval of B - A."""
    by_id = {w.id: w for w in b}
    pairs = [(w, by_id[w.id]) for w in a if w.id in by_id and w.tokens and by_id[w.id].tokens]
    if not pairs:
        raise ForkliftError("no window is scored by both sides")
    lp = np.array([[x.logprob_sum or 0.0, y.logprob_sum or 0.0] for x, y in pairs])  # (windows, side)
    tok = np.array([[x.tokens, y.tokens] for x, y in pairs], dtype=float)
    n = len(pairs)
    rate = lp.sum(axis=0) / tok.sum(axis=0)  # mean logprob a token, per side
    ppl = np.exp(-rate)
    delta = float(ppl[1] - ppl[0])
    low = high = standard_error = None
    if n >= 2:
        # PPL = exp(-R), R = sum(lp) / sum(tok): window i moves PPL by -PPL (lp_i - R tok_i) / sum(tok)
        share = -ppl * (lp - rate * tok) / tok.sum(axis=0)
        difference = share[:, 1] - share[:, 0]  # these sum to zero; their spread is the sampling error
        standard_error = math.sqrt(n / (n - 1) * float(np.sum(difference**2)))
        half = float(stats.t.ppf(1 - (1 - LEVEL) / 2, n - 1)) * standard_error
        low, high = delta - half, delta + half
    return PplResult(
        windows=n,
        ppl_a=float(ppl[0]),
        ppl_b=float(ppl[1]),
        delta=delta,
        low=low,
        high=high,
        standard_error=standard_error,
        identical=bool(np.all(lp[:, 0] == lp[:, 1]) and np.all(tok[:, 0] == tok[:, 1])),
    )


def mcnemar(right_a: list[bool], right_b: list[bool]) -> McNemar:
    """McNemar's exact test: a two-sided binomial test of the discordant pairs (p = 1 with none)."""
    pairs = list(zip(right_a, right_b, strict=True))
    a_only = sum(x and not y for x, y in pairs)
    b_only = sum(y and not x for x, y in pairs)
    discordant = a_only + b_only
    p = stats.binomtest(min(a_only, b_only), discordant, 0.5).pvalue if discordant else 1.0
    return McNemar(
        both_right=sum(x and y for x, y in pairs),
        a_only=a_only,
        b_only=b_only,
        neither=sum(not x and not y for x, y in pairs),
        p_value=float(p),
    )


def mcnemar_verdict(test: McNemar) -> tuple[Claim, str]:
    counts = f"A-only right {test.a_only}, B-only right {test.b_only}; McNemar exact p={test.p_value:.3f}"
    if test.p_value >= 0.05:
        return "noise", f"no difference ({counts})"
    return (
        "worse" if test.a_only > test.b_only else "better"
    ), f"B {'worse' if test.a_only > test.b_only else 'better'} ({counts})"


def gsm8k_change(a: list[Question], b: list[Question]) -> Gsm8kResult:
    by_id = {q.id: q for q in b}
    pairs = [(q, by_id[q.id]) for q in a if q.id in by_id]
    if not pairs:
        raise ForkliftError("no question is answered by both sides")

    def accuracy(side: list[Question]) -> dict[str, float]:
        return {
            "strict": sum(q.correct_strict for q in side) / len(side),
            "flexible": sum(q.correct_flexible for q in side) / len(side),
        }

    return Gsm8kResult(
        questions=len(pairs),
        accuracy_a=accuracy([x for x, _ in pairs]),
        accuracy_b=accuracy([y for _, y in pairs]),
        strict=mcnemar([x.correct_strict for x, _ in pairs], [y.correct_strict for _, y in pairs]),
        flexible=mcnemar([x.correct_flexible for x, _ in pairs], [y.correct_flexible for _, y in pairs]),
    )


def _ppl_verdict(result: PplResult) -> tuple[Claim, str]:
    if result.identical:
        return "identical", f"identical: every one of {result.windows} windows scored the same"
    if result.low is None or result.high is None:
        return "insufficient", f"Δ {result.delta:+.3f} over 1 window: too few windows for an interval (need 2)"
    interval = f"Δ {result.delta:+.3f} (95% CI {result.low:+.3f}..{result.high:+.3f}, {result.windows} windows)"
    if result.low <= 0 <= result.high:
        return "noise", f"no difference: {interval}"
    return ("worse" if result.delta > 0 else "better"), f"B {'higher' if result.delta > 0 else 'lower'}: {interval}"


def _canary_verdict(a: SuiteRun, b: SuiteRun) -> tuple[Claim, str]:
    if a.body.passed and b.body.passed:
        return "identical", "both pass"
    if a.body.passed:
        return "worse", f"B regressed: {b.body.failure}"
    if b.body.passed:
        return "better", "B passes where A failed"
    return "failed", "both fail"


def compare_pair(a: SuiteRun, b: SuiteRun) -> SuiteComparison:
    """One row: a suite of A against the same suite of B."""
    comparison = SuiteComparison(
        suite=a.body.suite,
        label=a.label,
        setting_a=a.setting,
        setting_b=b.setting,
        build_a=a.build,
        build_b=b.build,
        host_a=a.hostname,
        host_b=b.hostname,
        path_a=str(a.path),
        path_b=str(b.path),
        value_a=headline(a),
        value_b=headline(b),
        claim="failed",
        verdict="",
    )
    try:
        _check_comparable(a, b)
    except ForkliftError as exc:
        comparison.claim, comparison.verdict = "refused", str(exc)
        return comparison
    suite = a.body.suite
    if suite in ("ppl", "gsm8k") and not (a.body.passed and b.body.passed):
        failed = [side for side, run in (("A", a), ("B", b)) if not run.body.passed]
        comparison.verdict = f"not compared: {' and '.join(failed)} failed"
        return comparison
    if suite == "ppl":
        windows = [[Window.model_validate(w) for w in run.body.items] for run in (a, b)]
        comparison.ppl = ppl_change(*windows)
        comparison.claim, comparison.verdict = _ppl_verdict(comparison.ppl)
    elif suite == "gsm8k":
        questions = [[Question.model_validate(q) for q in run.body.items] for run in (a, b)]
        comparison.gsm8k = gsm8k_change(*questions)
        claim, text = mcnemar_verdict(comparison.gsm8k.strict)
        _, flexible = mcnemar_verdict(comparison.gsm8k.flexible)
        comparison.claim, comparison.verdict = claim, f"strict: {text}; flexible: {flexible}"
    else:
        comparison.claim, comparison.verdict = _canary_verdict(a, b)
    return comparison


def _key(run: SuiteRun) -> tuple[str, ...]:
    return (run.body.suite, run.label)


def compare_suites(
    a_runs: list[SuiteRun], b_runs: list[SuiteRun], *, across_machines: bool = False
) -> tuple[list[SuiteComparison], list[str]]:
    """Rows for every suite both sides ran (the latest receipt of each per box), and what only one side ran."""
    latest_a = {(_key(r), r.machine_id): r for r in a_runs}
    latest_b = {(_key(r), r.machine_id): r for r in b_runs}
    rows, alone = [], []
    for (key, machine), b in latest_b.items():
        same_box = latest_a.get((key, machine))
        others = [a for (k, m), a in latest_a.items() if k == key and m != machine]
        if same_box is not None:
            rows.append(compare_pair(same_box, b))
        elif others and across_machines:
            rows += [compare_pair(a, b) for a in others]
        elif others:
            raise ForkliftError(
                f"not comparable: {b.label} of {b.path} ran on {b.hostname}, A's on {others[0].hostname}; "
                "pass --across-machines to show each box as its own row"
            )
        else:
            alone.append(f"B only: {b.label} on {b.hostname}")
    matched = {(r.suite, r.label) for r in rows}
    alone += [f"A only: {a.label} on {a.hostname}" for (k, _), a in latest_a.items() if k not in matched]
    return rows, alone


@dataclass(frozen=True)
class SuiteComparisons:
    """The quality and canary receipts of each folder after the first, compared with the first's."""

    rows: list[SuiteComparison]
    unmatched: list[str]  # suites only one side ran
    has_bench: bool  # the baseline holds bench receipts too (compared after these)


def compare_suite_folders(paths: list[Path], *, across_machines: bool) -> SuiteComparisons | None:
    """paths[1:] each against paths[0]; None when the baseline holds no quality or canary receipt."""
    baseline_receipts = read_receipts([paths[0]])
    baseline = suite_runs(baseline_receipts)
    if not baseline:
        return None
    rows: list[SuiteComparison] = []
    alone: list[str] = []
    for other in paths[1:]:
        found, only = compare_suites(baseline, suite_runs(read_receipts([other])), across_machines=across_machines)
        rows += found
        alone += only
    return SuiteComparisons(rows, alone, any(r.kind == "bench" for _, r in baseline_receipts))
