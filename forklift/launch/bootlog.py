"""Boot facts from an engine's log: a pure function over lines, driven by the engine adapter.

Any distribution can add its own facts without touching forklift: a line
containing `forklift boot fact: key=value key=value` lands in BootFacts.extra.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from forklift.engines import EngineAdapter
from forklift.launch.schema import BootFacts, RankFacts

EXTRA_FACT_MARK = "forklift boot fact:"
_EXTRA_PAIR = re.compile(r"([A-Za-z_][\w.-]*)=(\S+)")
_MAX_FATAL_CHARS = 400


def strip_prefix(adapter: EngineAdapter, line: str) -> str:
    return adapter.log_prefix.sub("", line.rstrip("\r\n"), count=1)


def parse_boot_log(lines: Iterable[str], adapter: EngineAdapter) -> BootFacts:
    """Every fact the log states; facts it does not state stay None (never zero)."""
    values: dict[str, Any] = {}  # BootFacts field -> value, each converted by its pattern
    unknown_env: list[str] = []
    extra: dict[str, str] = {}
    fatal: tuple[int, str] | None = None
    by_pid: dict[int, dict[str, Any]] = {}
    tags: dict[int, str] = {}
    ranks: dict[int, dict[str, int]] = {}
    for raw in lines:
        tagged = adapter.process_tag.match(raw) if adapter.process_tag else None
        pid: int | None = None
        line = strip_prefix(adapter, raw)
        if tagged:
            pid = int(tagged.group("pid"))
            tags[pid] = tagged.group("tag")  # the last name wins: "Worker" becomes "Worker_TP1" once ranks exist
            placed = adapter.rank_line.search(line) if adapter.rank_line else None
            if placed:
                ranks[pid] = {k: int(v) for k, v in placed.groupdict().items()}
        if EXTRA_FACT_MARK in line:
            extra.update(_EXTRA_PAIR.findall(line.split(EXTRA_FACT_MARK, 1)[1]))
            continue
        for pattern in adapter.fact_patterns:
            match = pattern.regex.search(line)
            if match:
                for group, (field, convert) in pattern.facts.items():
                    if match.group(group) is not None:
                        values[field] = convert(match.group(group))
                        if pid is not None:
                            by_pid.setdefault(pid, {})[field] = values[field]
        match = adapter.unknown_env_regex.search(line)
        if match and match.group("name") not in unknown_env:
            unknown_env.append(match.group("name"))
        for fatal_pattern in adapter.fatal_patterns:
            if fatal_pattern.regex.search(line):
                if fatal is None or fatal_pattern.rank < fatal[0]:
                    fatal = (fatal_pattern.rank, line.strip()[:_MAX_FATAL_CHARS])
                break
    return BootFacts(
        **values,
        unknown_env=unknown_env,
        extra=extra,
        fatal=fatal[1] if fatal else None,
        ranks=_per_rank(by_pid, tags, ranks),
    )


def _per_rank(
    by_pid: dict[int, dict[str, Any]], tags: dict[int, str], ranks: dict[int, dict[str, int]]
) -> list[RankFacts]:
    """One entry per engine process that stated facts, ordered by rank, only when there is more than one.

    The API server (the HTTP front end, not a rank) is left out: it only says where it listens.
    """
    by_pid = {pid: facts for pid, facts in by_pid.items() if not tags.get(pid, "").startswith("APIServer")}
    if len(by_pid) < 2:
        return []
    out = []
    for pid, facts in by_pid.items():
        placed = ranks.get(pid, {})
        out.append(
            RankFacts(
                process=tags.get(pid, "?"),
                pid=pid,
                rank=placed.get("rank"),
                tp_rank=placed.get("tp"),
                dp_rank=placed.get("dp"),
                pp_rank=placed.get("pp"),
                facts=facts,
            )
        )
    return sorted(out, key=lambda r: (r.rank is None, r.rank if r.rank is not None else 0, r.process, r.pid))
