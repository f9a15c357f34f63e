"""The ladder table: value, outcome in the engine's own words, KV pool, memory at the burst peak, boot time."""

from __future__ import annotations

from forklift.ladder.schema import LadderBody, LadderCell


def _memory(cell: LadderCell) -> str:
    """The burst's worst readings, named briefly: engine RSS, host available, per GPU used/free."""
    if not cell.memory:
        return "–"
    parts = []
    for key, value in sorted(cell.memory.items()):
        name = key.removesuffix("_gib").replace("_", " ")
        parts.append(f"{name} {value:.2f} GiB")
    return ", ".join(parts)


def ladder_rows(body: LadderBody) -> tuple[list[str], list[list[str]]]:
    """Header and rows, one per value tried; the recommended value is marked, untried values say so."""
    header = ["value", "outcome", "KV pool (tokens)", "memory at burst peak", "boot s", ""]
    cells = {c.value: c for c in body.cells}
    rows = []
    for value in body.values:
        mark = "recommended" if value == body.recommended else "highest pass" if value == body.highest_pass else ""
        cell = cells.get(value)
        if cell is None:
            rows.append(
                [
                    value,
                    "not run" + (" (stopped at the first failure)" if body.stopped_early else ""),
                    "–",
                    "–",
                    "–",
                    mark,
                ]
            )
            continue
        outcome = cell.outcome + (f" ({cell.reason})" if cell.reason else f" ({cell.requests_ok}/{cell.requests} ok)")
        pool = f"{cell.kv_pool_tokens:,}" if cell.kv_pool_tokens is not None else "not reported"
        seconds = f"{cell.boot_seconds:.1f}" if cell.boot_seconds is not None else "–"
        rows.append([value, outcome, pool, _memory(cell), seconds, mark])
    if body.recommended is not None and body.recommended not in body.values:
        rows.append([body.recommended, "not run (margin below the highest pass)", "–", "–", "–", "recommended"])
    return header, rows
