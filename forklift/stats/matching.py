"""Which receipts of side A are compared with which of side B.

Each side is cut into groups by (box, setting, workload); a group never spans
two boxes, so numbers from different machines are never pooled. A group of B
meets the A group with the same setting and workload on the same box. When
each side holds a single setting the labels need not match (comparing
"ngram" against "plain" is the point). A group with no counterpart on its
own box is refused unless across_machines, and then meets each box's
counterpart as a row of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from forklift.errors import ForkliftError
from forklift.stats.guards import different_machines
from forklift.stats.sample import BenchRun

GroupKey = tuple[str, str, str]  # machine id, setting, workload name


def groups(runs: list[BenchRun]) -> dict[GroupKey, list[BenchRun]]:
    grouped: dict[GroupKey, list[BenchRun]] = {}
    for run in runs:
        grouped.setdefault((run.machine_id, run.setting, run.body.workload.name), []).append(run)
    return grouped


@dataclass
class Matching:
    pairs: list[tuple[list[BenchRun], list[BenchRun]]] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)  # "setting / workload on host" measured by A only
    only_b: list[str] = field(default_factory=list)


def _describe(key: GroupKey, runs: list[BenchRun]) -> str:
    return f"{key[1]} / {key[2]} on {runs[0].hostname}"


def match(a_runs: list[BenchRun], b_runs: list[BenchRun], *, across_machines: bool = False) -> Matching:
    groups_a, groups_b = groups(a_runs), groups(b_runs)
    one_group = len({k[1:] for k in groups_a}) == 1 and len({k[1:] for k in groups_b}) == 1
    one_setting = len({k[1] for k in groups_a}) == 1 and len({k[1] for k in groups_b}) == 1
    matching = Matching()
    matched_a: set[GroupKey] = set()
    for key_b, runs_b in groups_b.items():
        candidates = [
            key_a for key_a in groups_a if one_group or (key_a[2] == key_b[2] and (one_setting or key_a[1] == key_b[1]))
        ]
        if not candidates:
            matching.only_b.append(_describe(key_b, runs_b))
            continue
        same_box = [key_a for key_a in candidates if key_a[0] == key_b[0]]
        if same_box:
            chosen = same_box[:1]
        elif across_machines:
            chosen = candidates
        else:
            raise different_machines(groups_a[candidates[0]][0], runs_b[0])
        for key_a in chosen:
            matching.pairs.append((groups_a[key_a], runs_b))
            matched_a.add(key_a)
    matching.only_a = [_describe(key, runs) for key, runs in groups_a.items() if key not in matched_a]
    if not matching.pairs:
        raise ForkliftError(
            "nothing to compare: A has "
            + ", ".join(_describe(k, r) for k, r in groups_a.items())
            + "; B has "
            + ", ".join(_describe(k, r) for k, r in groups_b.items())
        )
    return matching
