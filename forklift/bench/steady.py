"""The steady-state window of a closed-loop run: the span in which all C requests are in flight.

A closed loop at concurrency C starts C requests at once (ramp-up: the first prefills, then C
streams), keeps C in flight while prompts remain, and drains as the last ones end. Only the
middle part is the load the cell names: a step decodes C tokens there, fewer at either end.
The window opens when the C-th request is sent and closes when the first request ends after
the last one was sent; a request sent and ended inside it saw only steady load.
"""

from __future__ import annotations

from collections.abc import Sequence

from forklift.bench.schema import SteadyWindow
from forklift.client.records import RequestRecord


def steady_window(records: Sequence[RequestRecord], concurrency: int) -> SteadyWindow | None:
    """The window of one run's records (one time base); None when C streams never ran together."""
    ended = [r for r in records if r.end is not None]
    if len(records) < concurrency or not ended:
        return None
    sends = sorted(r.send for r in records)
    start, last_send = sends[concurrency - 1], sends[-1]
    after = [r.end for r in ended if r.end is not None and r.end > last_send]
    if not after:
        return None
    end = min(after)
    if end <= start:
        return None
    first, last = sends[0], max(r.end for r in ended if r.end is not None)

    def tokens(lo: float, hi: float) -> int:
        return sum(n for r in records for t, n in r.chunks if lo <= t <= hi)

    return SteadyWindow(
        start_s=start,
        end_s=end,
        requests_inside=sum(1 for r in records if inside(r, start, end)),
        tokens=tokens(start, end),
        ramp_s=start - first,
        ramp_tokens=tokens(first, start) - tokens(start, start),
        drain_s=last - end,
        drain_tokens=tokens(end, last) - tokens(end, end),
    )


def inside(record: RequestRecord, start: float, end: float) -> bool:
    return record.end is not None and record.send >= start and record.end <= end


def steady_records(records: Sequence[RequestRecord], window: SteadyWindow | None) -> list[RequestRecord]:
    """The records whose whole life lay inside the window: every record when there is no window (an open loop)."""
    if window is None:
        return list(records)
    return [r for r in records if inside(r, window.start_s, window.end_s)]
