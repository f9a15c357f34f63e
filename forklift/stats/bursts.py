"""Burst delivery per side: whether the host delivered A's and B's answers alike, so their latencies compare.

A request delivered in a burst (forklift.client.records.RequestRecord.delivered_in_burst) waited in the
server's frontend and then came whole: its TTFT is its E2E and both carry the wait. Decode timing already
leaves such requests out (forklift.stats.metrics). TTFT and E2E keep them, which is right while bursts
fall on both sides alike, and wrong when the host bursts on one side and not the other: the latency
interval then measures the host's delivery, not the build, and no boot-to-boot sd of a few boots covers it
(seen on a 2-core box: both boots of a comment-only build burst at c4, E2E read +143%, CI +40.7..+319.7%).

The rule: the sides' shares of kept requests delivered in bursts differ by Fisher's exact test, two-sided,
at p < 0.01.
- Exact at any count, so it holds for a cell of eight requests as for a million; one stray burst request
  (1 of n against 0 of m) has p = 1 whatever n and m, and bursts the host throws at random land on both
  sides alike (ABBA interleaves them): chance alone fires it 1 time in 100.
- No floor on the size of the gap: a burst's TTFT is its whole answer (about 10x a streamed one's TTFT
  where this was seen), so a few points of share move a side's TTFT by more than a tight margin, and a
  cell large enough to make a few points significant has an interval tight enough to claim on that shift.
  A huge cell can make a tenth of a point significant, a shift below any margin: undecided again.
- Requests of one run share the host's state, so a test over requests errs towards firing (a bursty run
  counts as many requests): the cost is an undecided verdict, never a claim.
"""

from __future__ import annotations

from scipy import stats

P_UNLIKE = 0.01


def unlike_delivery(bursts_a: int, kept_a: int, bursts_b: int, kept_b: int) -> str | None:
    """Why the sides' latencies are not like for like, by the rule in this module's docstring, or None."""
    if not (kept_a and kept_b) or bursts_a * kept_b == bursts_b * kept_a:
        return None
    table = [[bursts_a, kept_a - bursts_a], [bursts_b, kept_b - bursts_b]]
    p = float(stats.fisher_exact(table).pvalue)
    if p >= P_UNLIKE:
        return None
    (more, x, n), (less, y, m) = sorted(
        (("A", bursts_a, kept_a), ("B", bursts_b, kept_b)), key=lambda side: side[1] / side[2], reverse=True
    )
    return (
        f"answers delivered in bursts on {more} ({x} of {n} kept requests) more often than on {less} "
        f"({y} of {m}; Fisher p = {p:.1g}): the host's delivery differs, not only the build"
    )
