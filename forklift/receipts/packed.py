"""Packed receipts: a finished receipt kept as gzip (NAME.json.gz), each request record's chunk times in columns.

A chunk time is the difference of two readings of the client's clock (nanoseconds, as doubles): it is an
integer number of nanoseconds plus a rounding of a few units in the last place. Written as decimal text each
takes about 19 characters that gzip cannot shrink much (the rounding looks random); as the nanoseconds since
the chunk before and that small remainder it takes about three bytes once compressed. The columns give back
the very same doubles: a record is packed only when unpacking it gives back its chunks bit for bit, and a
packed file is kept only when it reads back as the receipt it was made from.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

from forklift.errors import ForkliftError
from forklift.fsio import GZIP_SUFFIX, dumps_json, read_json, write_atomic

PACKED_SUFFIX = ".json" + GZIP_SUFFIX
COLUMNS = "ns+residual/1"  # the packed chunks' form: a change to it is a new name, and a reader of the old one
NS = 10**9
MAX_EXPONENT = 1100  # a double's exact binary fraction has at most 1074 binary places
EXACT = 2**53  # a double holds every integer below this exactly


def is_packed(path: Path) -> bool:
    return path.name.endswith(PACKED_SUFFIX)


def written_name(path: Path) -> str:
    """The name a receipt was written under (what other receipts name it by), packed or not."""
    return path.name.removesuffix(GZIP_SUFFIX) if is_packed(path) else path.name


def _nearest(numerator: int, denominator: int) -> int:
    """numerator / denominator rounded to the nearest integer (halves up), in exact integer arithmetic."""
    return (2 * numerator + denominator) // (2 * denominator)


def pack_chunks(chunks: Any) -> dict[str, Any] | None:
    """A record's `chunks` ([[seconds, tokens], ...]) as columns, or None when they are not that shape or the
    columns would not give them back bit for bit."""
    if not isinstance(chunks, list) or not chunks:
        return None
    if not all(
        isinstance(c, list) and len(c) == 2 and type(c[0]) is float and math.isfinite(c[0]) and type(c[1]) is int
        for c in chunks
    ):
        return None
    ratios = [c[0].as_integer_ratio() for c in chunks]
    exponent = max(den.bit_length() - 1 for _, den in ratios)  # every denominator is a power of two
    units = [num << (exponent - den.bit_length() + 1) for num, den in ratios]
    nanoseconds = [_nearest(k * NS, 1 << exponent) for k in units]
    packed = {
        "packed": COLUMNS,
        "exponent": exponent,
        "ns": [nanoseconds[0]] + [b - a for a, b in pairwise(nanoseconds)],
        "residual": [k - _nearest(n << exponent, NS) for k, n in zip(units, nanoseconds, strict=True)],
        "tokens": [c[1] for c in chunks],
    }
    try:
        same = dumps_json(unpack_chunks(packed, "")) == dumps_json(chunks)
    except ForkliftError:
        return None
    return packed if same else None


def unpack_chunks(packed: dict[str, Any], where: str) -> list[list[Any]]:
    """The chunks columns hold, or one line naming `where` and what is wrong with them."""
    if packed.get("packed") != COLUMNS or set(packed) != {"packed", "exponent", "ns", "residual", "tokens"}:
        raise ForkliftError(
            f"{where}: packed chunks are not {COLUMNS!r} columns (packed, exponent, ns, residual, tokens)"
        )
    exponent = packed["exponent"]
    if not (type(exponent) is int and 0 <= exponent <= MAX_EXPONENT):
        raise ForkliftError(f"{where}: packed chunks' exponent is not an integer from 0 to {MAX_EXPONENT}")
    ns, residual, tokens = (_integers(packed[name], where) for name in ("ns", "residual", "tokens"))
    if not len(ns) == len(residual) == len(tokens):
        raise ForkliftError(f"{where}: packed chunks' ns, residual and tokens differ in length")
    chunks: list[list[Any]] = []
    at = 0
    for step, rest, count in zip(ns, residual, tokens, strict=True):
        at += step
        units = _nearest(at << exponent, NS) + rest
        if abs(units) >= EXACT:
            raise ForkliftError(f"{where}: packed chunk {len(chunks)} is not a time a double holds exactly")
        chunks.append([math.ldexp(units, -exponent), count])
    return chunks


def _integers(column: Any, where: str) -> list[int]:
    if not (isinstance(column, list) and all(type(v) is int for v in column)):
        raise ForkliftError(f"{where}: packed chunks' ns, residual and tokens must be lists of integers")
    return column


def _records(raw: Any) -> Iterator[dict[str, Any]]:
    """The request records of a receipt's cells (bench and ladder-burst receipts hold them)."""
    body = raw.get("body") if isinstance(raw, dict) else None
    cells = body.get("cells") if isinstance(body, dict) else None
    for cell in cells if isinstance(cells, list) else []:
        requests = cell.get("requests") if isinstance(cell, dict) else None
        for record in requests if isinstance(requests, list) else []:
            if isinstance(record, dict):
                yield record


def unpack_receipt(path: Path, raw: Any) -> Any:
    """A packed receipt's JSON as it was written: every record's chunk columns back to [[seconds, tokens], ...]."""
    for index, record in enumerate(_records(raw)):
        if isinstance(record.get("chunks"), dict):
            record["chunks"] = unpack_chunks(record["chunks"], f"{path}: request record {index}")
    return raw


def read_receipt_json(path: Path) -> Any:
    """A receipt file's JSON, a packed one (NAME.json.gz) unpacked: the one way a receipt's text is read whole."""
    raw = read_json(path, "receipt")
    return unpack_receipt(path, raw) if is_packed(path) else raw


def pack_receipt(path: Path) -> Path:
    """`path` (NAME.json) packed as NAME.json.gz, read back and checked equal, then the .json removed."""
    raw = read_json(path, "receipt")
    if not (isinstance(raw, dict) and str(raw.get("schema")).startswith("forklift.receipt/")):
        raise ForkliftError(f"{path}: not a forklift receipt; only receipts are packed")
    original = dumps_json(raw, indent=None)
    for record in _records(raw):
        columns = pack_chunks(record.get("chunks"))
        if columns is not None:
            record["chunks"] = columns
    target = path.with_name(path.name + GZIP_SUFFIX)
    text = json.dumps(raw, separators=(",", ":"), allow_nan=False).encode()
    write_atomic(target, gzip.compress(text, compresslevel=9, mtime=0))
    if dumps_json(read_receipt_json(target), indent=None) != original:
        target.unlink()
        raise ForkliftError(f"{path}: its packed copy does not read back as the receipt; left as it is")
    path.unlink()
    return target
