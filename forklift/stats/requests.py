"""A cell's request records as columns: the few values compare reads of each request, one row a request.

As RequestRecord objects a receipt of a million requests is gigabytes (each chunk a tuple); as columns it
is about 90 bytes a request, chunks folded into the two values compare reads of them (delivered in a burst,
tokens per chunk). `RecordColumns` builds them from raw records, a batch at a time (a receipt read whole
or streamed, forklift.receipts.stream), checking each field as the RequestRecord schema types it and the
times as a Cell does: what it refuses is a ValueError naming the record.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain, islice
from types import NoneType, UnionType
from typing import Any, Literal, Union, get_args, get_origin

import numpy as np

from forklift.client.records import BURST_GAP_S, RequestRecord
from forklift.fsio import LIMIT_ENV, PARSED_PER_BYTE, max_file_bytes

ROW_BYTES = 96  # the arrays of one row (12 of them) with the lists they are built from
STRING_BYTES = 49  # what CPython takes for an empty str, beyond its characters


def _types(annotation: Any) -> tuple[frozenset[type], frozenset[Any] | None]:
    """The JSON value types a RequestRecord field takes, and its allowed strings when it is a Literal."""
    if get_origin(annotation) in (Union, UnionType):
        parts = [_types(arg) for arg in get_args(annotation)]
        types = frozenset[type]().union(*(t for t, _ in parts))
        words = [w for _, w in parts if w is not None]
        return types, frozenset[Any]().union(*words, [None] if NoneType in types else []) if words else None
    if get_origin(annotation) is Literal:
        return frozenset({str}), frozenset(get_args(annotation))
    if annotation is float:
        return frozenset({float, int}), None
    if annotation in (str, int, NoneType):
        return frozenset({annotation}), None
    return frozenset({get_origin(annotation) or annotation}), None  # list, dict: their items are checked apart


FIELDS = {name: _types(field.annotation) for name, field in RequestRecord.model_fields.items()}
REQUIRED = [name for name, field in RequestRecord.model_fields.items() if field.is_required()]


@dataclass(frozen=True)
class RequestColumns:
    """One cell's requests of one receipt, in record order; NaN where a record has no value."""

    prompt_ids: list[str]  # each distinct prompt id once
    prompt: np.ndarray  # row -> index into prompt_ids
    run: np.ndarray
    send: np.ndarray
    first_token: np.ndarray
    end: np.ndarray
    completion_tokens: np.ndarray
    ok: np.ndarray  # no error and an end (RequestRecord.ok)
    burst: np.ndarray  # RequestRecord.delivered_in_burst
    tok_chunk: np.ndarray  # decode tokens per chunk when the server counted them (stats.metrics.tokens_per_chunk)
    tok_step: np.ndarray  # from the record's own speculation stats (stats.metrics.spec_tok_step)
    outputs: list[str]  # each distinct output hash once
    output: np.ndarray  # row -> index into outputs; -1: no hash

    def __len__(self) -> int:
        return len(self.run)

    @property
    def ttft(self) -> np.ndarray:
        ttft: np.ndarray = self.first_token - self.send
        return ttft

    @property
    def e2e(self) -> np.ndarray:
        e2e: np.ndarray = self.end - self.send
        return e2e

    @property
    def tpot(self) -> np.ndarray:
        """(E2E - TTFT) / (tokens - 1), for two tokens or more (RequestRecord.tpot)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            tpot = (self.end - self.first_token) / (self.completion_tokens - 1)
        return np.where(self.completion_tokens >= 2, tpot, np.nan)

    @property
    def decode_tps(self) -> np.ndarray:
        tpot = self.tpot
        with np.errstate(divide="ignore"):
            return np.where(tpot != 0, 1.0 / tpot, np.nan)

    def prompt_of(self, rows: np.ndarray) -> list[str]:
        return [self.prompt_ids[code] for code in self.prompt[rows].tolist()]

    def output_of(self, rows: np.ndarray) -> list[str | None]:
        return [self.outputs[code] if code >= 0 else None for code in self.output[rows].tolist()]


def spec_tok_step(spec: dict[str, float] | None) -> float | None:
    """Tokens per engine step from one request's speculative-decoding stats: a ready ``tok_step``, or
    1 + accepted / drafts (vLLM's definition) from the counters."""
    if not spec:
        return None
    if spec.get("tok_step") is not None:
        return float(spec["tok_step"])
    drafts = spec.get("drafts", spec.get("num_drafts"))
    accepted = spec.get("accepted_tokens", spec.get("num_accepted_tokens"))
    if not drafts or accepted is None:
        return None
    return 1.0 + float(accepted) / float(drafts)


class RecordBudget:
    """What the columns of one receipt may hold: the parse budget of a file read whole (3x the size limit)."""

    def __init__(self) -> None:
        self.limit = PARSED_PER_BYTE * max_file_bytes()
        self.used = 0

    def take(self, size: int) -> None:
        self.used += size
        if self.used > self.limit:
            raise ValueError(
                f"its request records would take over {self.limit / 2**20:,.0f} MiB as columns ({LIMIT_ENV} raises it)"
            )


class RecordColumns:
    """Columns of one cell, built a batch of raw records (parsed JSON) at a time."""

    def __init__(self, budget: RecordBudget | None = None) -> None:
        self.budget = budget or RecordBudget()
        self.prompt_codes: dict[str, int] = {}
        self.output_codes: dict[str, int] = {}
        self.parts: list[dict[str, np.ndarray]] = []
        self.rows = 0

    def add(self, batch: list[Any]) -> None:
        """Check a batch of raw records and keep their columns; a ValueError names the first bad record."""
        first = self.rows
        for i, record in enumerate(batch):
            if type(record) is not dict:
                raise ValueError(f"request {first + i}: not an object")
            if not record.keys() <= FIELDS.keys():
                unknown = sorted(record.keys() - FIELDS.keys())[0]
                raise ValueError(f"request {first + i}: unknown field {unknown[:40]!r}")
        column = {name: [r.get(name, DEFAULTS.get(name)) for r in batch] for name in FIELDS}
        for name, (types, words) in FIELDS.items():
            _check(name, column[name], types, words, first)
        part = {
            name: np.array(column[name], dtype=float) for name in ("send", "first_token", "end", "completion_tokens")
        }
        part["run"] = np.array(column["run"], dtype=np.int64)
        part["ok"] = np.array([kind is None for kind in column["error_kind"]], dtype=bool) & ~np.isnan(part["end"])
        _check_times(column["prompt_id"], part)
        part.update(_fold_chunks(column, part["send"]))
        for i, spec in enumerate(column["spec"]):
            if spec is not None and not set(map(type, spec.values())) <= {float, int}:
                raise ValueError(f"request {first + i}: spec holds a value that is not a number")
        part["tok_step"] = np.array([spec_tok_step(spec) for spec in column["spec"]], dtype=float)
        prompt, prompt_bytes = _code(self.prompt_codes, column["prompt_id"])
        output, output_bytes = _code(self.output_codes, column["output_sha256"])
        part["prompt"], part["output"] = prompt, output
        self.budget.take(ROW_BYTES * len(batch) + prompt_bytes + output_bytes)
        self.parts.append(part)
        self.rows += len(batch)

    def columns(self) -> RequestColumns:
        integers = ("prompt", "run", "output")
        arrays = {
            name: np.concatenate([part[name] for part in self.parts])
            if self.parts
            else np.array([], dtype=np.int64 if name in integers else bool if name in ("ok", "burst") else float)
            for name in COLUMNS
        }
        return RequestColumns(prompt_ids=list(self.prompt_codes), outputs=list(self.output_codes), **arrays)


COLUMNS = (
    "prompt",
    "run",
    "output",
    "send",
    "first_token",
    "end",
    "completion_tokens",
    "ok",
    "burst",
    "tok_chunk",
    "tok_step",
)
DEFAULTS = {
    name: field.get_default(call_default_factory=True)
    for name, field in RequestRecord.model_fields.items()
    if not field.is_required()
}


def _check(name: str, values: list[Any], types: frozenset[type], words: frozenset[Any] | None, first: int) -> None:
    """Every record's `name` is of `types` (and among `words`); else a ValueError naming the first that is not."""
    if set(map(type, values)) <= types and (words is None or set(values) <= words):
        return
    index = next(i for i, v in enumerate(values) if type(v) not in types or (words is not None and v not in words))
    shown = repr(values[index])
    raise ValueError(f"request {first + index}: {name} = {shown[:40]}{'...' if len(shown) > 40 else ''} is not valid")


def _code(codes: dict[Any, int], values: list[Any]) -> tuple[np.ndarray, int]:
    """Each value's index among the distinct values seen so far (-1 for None), and the bytes the new ones take."""
    before = len(codes)
    out = np.array([-1 if v is None else codes.setdefault(v, len(codes)) for v in values], dtype=np.int64)
    new = sum(STRING_BYTES + len(v) for v in islice(reversed(codes), len(codes) - before))
    return out, new


def _check_times(prompt_ids: list[str], part: dict[str, np.ndarray]) -> None:
    """A record must be one the clock could have made: no negative time, no event before its send (as a Cell checks)."""
    send, first, end = part["send"], part["first_token"], part["end"]
    with np.errstate(invalid="ignore"):
        infinite = np.isinf(send) | np.isinf(first) | np.isinf(end)
        early = (send < 0) | (first < send) | (end < send)
        late = end < first
    for rows, why in (
        (infinite, "a time that is not a finite number"),
        (early, "a time before its send (or a negative send)"),
        (late, "ends before its first token"),
    ):
        if rows.any():
            raise ValueError(f"prompt {prompt_ids[int(np.argmax(rows))]!r}: {why}")


def _fold_chunks(column: dict[str, list[Any]], send: np.ndarray) -> dict[str, np.ndarray]:
    """Each record's chunks folded into whether they came in a burst and its decode tokens per chunk."""
    lists = column["chunks"]
    pairs = list(chain.from_iterable(lists))
    try:
        two = set(map(len, pairs)) <= {2}
        flat = np.fromiter(chain.from_iterable(pairs), dtype=float, count=2 * len(pairs)) if two else None
    except (TypeError, ValueError):
        flat = None
    if flat is None or not np.isfinite(flat).all():
        raise ValueError("a chunk that is not an (arrival time, tokens) pair of finite numbers")
    times, tokens = flat[0::2], flat[1::2]
    if not (tokens == np.floor(tokens)).all():
        raise ValueError("a chunk whose token count is not a whole number")
    counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    starts = np.cumsum(counts) - counts
    owner = np.repeat(np.arange(len(lists)), counts)
    if (times < send[owner]).any():
        bad = int(owner[np.argmax(times < send[owner])])
        raise ValueError(f"prompt {column['prompt_id'][bad]!r}: a time before its send (or a negative send)")
    within = np.ones(len(times), dtype=bool)  # a gap to the chunk before, in the same record
    within[starts[counts > 0]] = False
    small = np.zeros(len(times), dtype=bool)
    small[1:] = np.diff(times) < BURST_GAP_S
    gaps = np.maximum(counts - 1, 0)
    burst = (gaps >= 2) & (2 * _segment_sums(small & within, starts, counts) > gaps)
    decoding = within & (tokens > 0)  # chunks after the first that carried tokens
    decode_tokens = _segment_sums(np.where(decoding, tokens, 0.0), starts, counts)
    decode_chunks = _segment_sums(decoding.astype(np.int64), starts, counts)
    usage = np.array([kind == "usage" for kind in column["chunk_tokens_from"]], dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        tok_chunk = np.where(usage & (decode_chunks > 0), decode_tokens / decode_chunks, np.nan)
    return {"burst": burst, "tok_chunk": tok_chunk}


def _segment_sums(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The sum of values[start : start + count] for each segment (0 for an empty one)."""
    total = np.concatenate([[0], np.cumsum(values)])
    sums: np.ndarray = total[starts + counts] - total[starts]
    return sums


def columns_of(records: list[RequestRecord]) -> RequestColumns:
    """Columns of records already validated (a receipt read whole, or built in memory)."""
    built = RecordColumns()
    if records:
        built.add([record.model_dump() for record in records])
    return built.columns()
