"""A cell's request records as columns: the few values compare reads of each request, one row a request.

As RequestRecord objects a receipt of a million requests is gigabytes (each chunk a tuple); as columns it
is about 90 bytes a request, chunks folded into the two values compare reads of them (delivered in a burst,
tokens per chunk). `RecordColumns` builds them a batch of records at a time: RequestRecords of a receipt
read whole, or `Record`s (RequestRecord's fields as a msgspec struct, type-checked as they are decoded) of
a streamed one (forklift.receipts.stream); it checks the times as a Cell does, refusing with a ValueError.

A streamed record keeps its chunks as their JSON text (checked as JSON by the decoder): decoded a tuple per
chunk they were most of the read's time. A batch's chunks are read together instead (`_chunks_of_text`): their
brackets and commas must be exactly those of pairs, every number of them is decoded in one list, and each
pair's second one must be an integer. A batch that is not so is decoded record by record as RequestRecord's
`list[tuple[float, int]]`, which names the first bad record or, when there is none, reads the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, compress, islice
from typing import Any

import msgspec
import numpy as np

from forklift.client.records import BURST_GAP_S, RequestRecord
from forklift.fsio import LIMIT_ENV, PARSED_PER_BYTE, max_file_bytes
from forklift.receipts.stream import RecordError

ROW_BYTES = 88  # the arrays of one row (11 of them) with the lists they are built from
STRING_BYTES = 49  # what CPython takes for an empty str, beyond its characters


def _record_struct() -> type[msgspec.Struct]:
    """RequestRecord's fields as a msgspec struct: what a streamed record is decoded and type-checked as (its
    chunks as their JSON text, read with the batch's)."""
    fields: list[Any] = []
    for name, field in RequestRecord.model_fields.items():
        if name == "chunks":
            fields.append((name, msgspec.Raw, msgspec.Raw(b"[]")))
        elif field.is_required():
            fields.append((name, field.annotation))
        else:
            default = field.get_default(call_default_factory=True)
            fields.append((name, field.annotation, msgspec.field(default_factory=list) if default == [] else default))
    return msgspec.defstruct("Record", fields, forbid_unknown_fields=True, kw_only=True)


Record = _record_struct()
CHUNKS = msgspec.json.Decoder(list[tuple[float, int]])  # one record's chunks, as RequestRecord has them
NUMBERS = msgspec.json.Decoder(list[int | float])
SPACE = b" \t\n\r"
DIGITS = b"0123456789+-" + SPACE  # a number's digits and signs, and whitespace
UNBRACKETED = bytes.maketrans(b"[]", b"  ")  # a batch's chunks as one array of numbers


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
    tok_chunk: np.ndarray  # decode tokens per chunk, when the server counted them (`_fold_chunks`)
    tok_step: np.ndarray  # from the record's own speculation stats (`spec_tok_step`)
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
        self.prompt_codes: dict[str | None, int] = {None: -1}  # each distinct value's index; None is none
        self.output_codes: dict[str | None, int] = {None: -1}
        self.parts: list[dict[str, np.ndarray]] = []
        self.rows = 0

    def add(self, batch: Sequence[Any]) -> None:
        """Keep the columns of a batch of records (`Record`s, or RequestRecords); a ValueError names a bad one."""
        prompt_ids = [r.prompt_id for r in batch]
        part = {
            name: np.array([getattr(r, name) for r in batch], dtype=float)
            for name in ("send", "first_token", "end", "completion_tokens")
        }
        try:
            part["run"] = np.array([r.run for r in batch], dtype=np.int64)
        except OverflowError:
            raise ValueError("a run index out of range") from None
        part["ok"] = np.array([r.error_kind is None for r in batch], dtype=bool) & ~np.isnan(part["end"])
        _check_times(prompt_ids, part)
        part.update(_fold_chunks(batch, prompt_ids, part["send"]))
        part["tok_step"] = np.array([spec_tok_step(r.spec) for r in batch], dtype=float)
        part["prompt"], prompt_bytes = _code(self.prompt_codes, prompt_ids)
        part["output"], output_bytes = _code(self.output_codes, [r.output_sha256 for r in batch])
        self.budget.take(ROW_BYTES * len(batch) + prompt_bytes + output_bytes)
        self.parts.append(part)
        self.rows += len(batch)

    def columns(self) -> RequestColumns:
        """The columns of the batches added; each batch's arrays are let go as their column is joined."""
        dtypes = {"prompt": np.int32, "run": np.int64, "output": np.int32, "ok": bool, "burst": bool}
        arrays = {
            name: np.concatenate([part.pop(name) for part in self.parts])
            if self.parts
            else np.array([], dtype=dtypes.get(name, float))
            for name in COLUMNS
        }
        self.parts.clear()
        prompt_ids, outputs = (
            [key for key in codes if key is not None] for codes in (self.prompt_codes, self.output_codes)
        )
        return RequestColumns(prompt_ids=prompt_ids, outputs=outputs, **arrays)


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


def _code(codes: dict[str | None, int], values: list[str | None]) -> tuple[np.ndarray, int]:
    """Each value's index among the distinct values seen so far (`codes` holds None: -1), and the bytes the new
    ones take."""
    before = len(codes)
    for value in dict.fromkeys(values):  # the batch's distinct values, in order: a new one gets the next index
        codes.setdefault(value, len(codes) - 1)
    out = np.fromiter(map(codes.__getitem__, values), dtype=np.int32, count=len(values))  # fewer than rows
    new = sum(STRING_BYTES + len(v or "") for v in islice(reversed(codes), len(codes) - before))
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


def _fold_chunks(batch: Sequence[Any], prompt_ids: list[str], send: np.ndarray) -> dict[str, np.ndarray]:
    """Each record's chunks folded into whether they came in a burst and its decode tokens per chunk.

    tok/chunk: decode tokens per streamed chunk after the first, a per-request stand-in for tok/step (vLLM
    streams one chunk per engine step, so with speculative decoding a chunk carries 1 + accepted tokens), only
    when the server counted each chunk's tokens (running usage). It is not the server's tok/step: that counts
    only steps that drafted, and a server that falls behind its client merges steps into one chunk.
    """
    counts, times, tokens = _chunk_arrays(batch)
    if not np.isfinite(times).all():
        raise ValueError("a chunk time that is not a finite number")
    starts = np.cumsum(counts) - counts
    owner = np.repeat(np.arange(len(batch)), counts)
    if (times < send[owner]).any():
        bad = int(owner[np.argmax(times < send[owner])])
        raise ValueError(f"prompt {prompt_ids[bad]!r}: a time before its send (or a negative send)")
    within = np.ones(len(times), dtype=bool)  # a gap to the chunk before, in the same record
    within[starts[counts > 0]] = False
    small = np.zeros(len(times), dtype=bool)
    small[1:] = np.diff(times) < BURST_GAP_S
    gaps = np.maximum(counts - 1, 0)
    burst = (gaps >= 2) & (2 * _segment_sums(small & within, starts, counts) > gaps)
    decoding = within & (tokens > 0)  # chunks after the first that carried tokens
    decode_tokens = _segment_sums(np.where(decoding, tokens, 0.0), starts, counts)
    decode_chunks = _segment_sums(decoding.astype(np.int64), starts, counts)
    usage = np.array([r.chunk_tokens_from == "usage" for r in batch], dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        tok_chunk = np.where(usage & (decode_chunks > 0), decode_tokens / decode_chunks, np.nan)
    return {"burst": burst, "tok_chunk": tok_chunk}


def _chunk_arrays(batch: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How many chunks each record has, and every chunk's time and tokens, in record order."""
    chunks = [r.chunks for r in batch]
    if chunks and isinstance(chunks[0], msgspec.Raw):
        found = _chunks_of_text(chunks)
        if found is not None:
            return found
        chunks = [_decoded_chunks(index, text) for index, text in enumerate(chunks)]
    counts = np.fromiter(map(len, chunks), dtype=np.int64, count=len(chunks))
    flat = np.fromiter(chain.from_iterable(chain.from_iterable(chunks)), dtype=float, count=2 * int(counts.sum()))
    return counts, flat[0::2], flat[1::2]


def _chunks_of_text(texts: list[msgspec.Raw]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The chunks of a batch's records from their JSON texts (each valid JSON), read together; None when they are
    not all arrays of [number, integer] pairs (or a number overflows a float)."""
    joined = b",".join(texts)
    ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) + 1)
    opens = np.flatnonzero(np.frombuffer(joined, dtype=np.uint8) == ord("["))
    counts = np.diff(np.searchsorted(opens, ends), prepend=0) - 1  # a record's own '[' and one a chunk
    if (counts < 0).any():
        return None
    # Left of the text: brackets, commas, a number's '.', 'e' and 'E', and whatever a string, an object or
    # true/false/null leaves. Exactly the brackets and commas of pairs: the text (valid JSON) holds one number
    # where each pair has one, and maybe one in a record with no pair (`[5]`: so those must be `[]`); a pair
    # followed by ']' at once: its second number is an integer.
    marks = joined.translate(None, DIGITS)
    shapes: dict[int, bytes] = {}  # this batch's, so no more than its own text
    expected = [shapes.get(count) or shapes.setdefault(count, _pairs(count)) for count in counts.tolist()]
    if marks.translate(None, b".eE") != b",".join(expected) or marks.count(b",]") != counts.sum():
        return None
    if not counts.all():
        if any(bytes(text).translate(None, SPACE) != b"[]" for text in compress(texts, (counts == 0).tolist())):
            return None
        joined = b",".join(compress(texts, counts.tolist()))
    numbers = NUMBERS.decode(b"[" + joined.translate(UNBRACKETED) + b"]")
    try:
        values = np.array(numbers, dtype=float)
    except OverflowError:
        return None
    return counts, values[0::2], values[1::2]


def _pairs(count: int) -> bytes:
    """The brackets and commas of `count` chunks written as JSON, numbers and whitespace left out."""
    return b"[" + b"[,]," * (count - 1) + b"[,]]" if count else b"[]"


def _decoded_chunks(index: int, text: msgspec.Raw) -> list[tuple[float, int]]:
    try:
        chunks: list[tuple[float, int]] = CHUNKS.decode(text)
    except msgspec.ValidationError as exc:
        why, _, at = str(exc).partition(" - at `$")
        raise RecordError(index, ".chunks" + at.rstrip("`"), why) from None
    return chunks


def _segment_sums(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The sum of values[start : start + count] for each segment (0 for an empty one)."""
    total = np.concatenate([[0], np.cumsum(values)])
    sums: np.ndarray = total[starts + counts] - total[starts]
    return sums


def columns_of(records: list[RequestRecord]) -> RequestColumns:
    """Columns of records already validated (a receipt read whole, or built in memory)."""
    built = RecordColumns()
    if records:
        built.add(records)
    return built.columns()
