"""Comparability guards: what must match before two bench receipts may be compared.

A paired delta between two different workloads, sampling settings or
boxes is a number that looks like a finding and is not one, so these refuse
with one line naming the field and both values.
"""

from __future__ import annotations

import json
from typing import Any

from forklift.errors import ForkliftError
from forklift.stats.sample import BenchRun

# WorkloadIdentity fields whose difference makes requests incomparable.
MUST_MATCH = ("hash", "corpus_hash", "sampling", "max_tokens", "salted", "endpoint")


def _shown(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else repr(value)


def check_comparable(a: BenchRun, b: BenchRun, *, across_machines: bool = False) -> None:
    """Raise ForkliftError naming the first field that differs between two bench receipts."""
    for field in MUST_MATCH:
        value_a, value_b = getattr(a.body.workload, field), getattr(b.body.workload, field)
        if value_a != value_b:
            raise ForkliftError(
                f"not comparable: workload.{field} differs: "
                f"{_shown(value_a)} in {a.path} vs {_shown(value_b)} in {b.path}"
            )
    if a.machine_id != b.machine_id and not across_machines:
        raise different_machines(a, b)


def different_machines(a: BenchRun, b: BenchRun) -> ForkliftError:
    return ForkliftError(
        f"not comparable: fingerprint.machine_id differs: {a.machine_id} ({a.hostname}) in {a.path} "
        f"vs {b.machine_id} ({b.hostname}) in {b.path}; pass --across-machines to show each box as its own row"
    )


def check_group(runs: list[BenchRun], *, across_machines: bool = False) -> None:
    """Receipts merged into one side must be comparable with each other."""
    for run in runs[1:]:
        check_comparable(runs[0], run, across_machines=across_machines)
