"""Read a receipt of any number of request records in bounded memory: the envelope and every small field whole,
each bench cell's request records in batches handed to the caller, who keeps what it needs of them.

The file is read with pread, never mapped: a file truncated while a mapping of it is read kills the reader
with SIGBUS, where a read comes back short and is one line ("changed while it was read"), as is a size that is
not the one it was opened with once the walk is done.

The checks are the whole reader's (forklift.fsio.read_json): a regular file only, opened without blocking;
at most the size limit outside the records, each record within it too; 64 levels deep; no NaN, Infinity or
float that overflows; one line naming the file. The file itself may be 32 times the limit (a million
requests are about 710 MiB of text); what the caller keeps of the records is its own budget.

How records are cut: a batch is the records up to the last `}` followed by `,`, `{` and the first record's
first key in a 4 MiB window, read from the file and decoded as one JSON array of records by msgspec (typed:
each field checked as it is read). A cut that is not between two records cannot parse (the array would be
left open, or closed with text after it), so a batch that parses is whole records. Where the cut fails (a
string holding that text, a later cell's records inside the window) the window is walked value by value.
"""

from __future__ import annotations

import gc
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from types import GenericAlias
from typing import Any

import msgspec

from forklift.errors import ForkliftError
from forklift.fsio import MAX_DEPTH, check_expansion, limit_words, loads_json, max_file_bytes, open_regular
from forklift.receipts.envelope import Receipt
from forklift.receipts.packed import is_packed, read_receipt_json
from forklift.receipts.store import receipt_from_json
from forklift.textsafe import terminal

# (cell index, a batch of that cell's request records, decoded); a ValueError it raises is the file's error
Records = Callable[[int, list[Any]], None]

WINDOW = 4 << 20
BLOCK = 64 << 10  # what a look at the text outside the records reads at once
FILE_LIMIT_FACTOR = 32

_SPACE = re.compile(rb"[ \t\n\r]*+")
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_SCALAR = re.compile(rb'[^,:\[\]{}"\s]++')
_STRUCTURE = re.compile(rb'["\[\]{}]')
_CUT = re.compile(rb"\}[ \t\n\r]*+,[ \t\n\r]*+\{")
_FIRST_KEY = re.compile(rb'\{[ \t\n\r]*+("(?:[^"\\]++|\\.)*+")', re.DOTALL)

Member = Callable[[str, int, int, dict[str, Any]], tuple[Any, int]]


def read_receipt_streaming(path: Path, record: type[msgspec.Struct], records: Records) -> Receipt:
    """A receipt whose bench cells' `requests` went to `records` batch by batch, each record decoded and
    type-checked as `record` (the requests are left empty here). A packed receipt (NAME.json.gz, at most the size
    limit unpacked) is read whole, its records handed on the same way."""
    if is_packed(path):
        return _read_packed(path, record, records)
    with open_regular(path, "receipt", FILE_LIMIT_FACTOR * max_file_bytes()) as (fd, size):
        collecting = gc.isenabled()
        gc.disable()  # parsed JSON holds no cycles; collections run over every batch's objects would double the time
        try:
            decoder = msgspec.json.Decoder(GenericAlias(list, (record,)))
            raw = _Scan(path, _Text(path, fd, size), decoder, records).document()
        finally:
            if collecting:
                gc.enable()
        if os.fstat(fd).st_size != size:
            raise changed(path, f"it was {size:,} bytes, it is {os.fstat(fd).st_size:,}")
    return receipt_from_json(path, raw)


def _read_packed(path: Path, record: type[msgspec.Struct], records: Records) -> Receipt:
    raw = read_receipt_json(path)
    decoder = msgspec.json.Decoder(GenericAlias(list, (record,)))
    body = raw.get("body") if isinstance(raw, dict) and raw.get("kind") == "bench" else None
    cells = body.get("cells") if isinstance(body, dict) else None
    for index, cell in enumerate(cells if isinstance(cells, list) else []):
        requests = cell.get("requests") if isinstance(cell, dict) else None
        if not isinstance(requests, list):
            continue
        cell["requests"] = []
        for start in range(0, len(requests), PACKED_BATCH):
            try:  # through JSON text, as a streamed batch is: the same checks, chunks kept as their text
                batch = decoder.decode(msgspec.json.encode(requests[start : start + PACKED_BATCH]))
            except msgspec.ValidationError as exc:
                why, _, at = str(exc).partition(" - at `$")
                found = re.match(r"\[(\d+)\](.*)`", at)
                where = f"{start + int(found[1])}{found[2]}" if found else ""
                raise invalid(path, f"cells.{index}.requests.{where}: {why}") from None
            try:
                records(index, batch)
            except RecordError as exc:
                raise invalid(path, f"cells.{index}.requests.{start + exc.index}{exc.where}: {exc.why}") from None
            except ValueError as exc:
                raise invalid(path, f"cells.{index}.requests: {exc}") from None
    return receipt_from_json(path, raw)


PACKED_BATCH = 4096  # records converted at once: a cell's typed records are never all made together


def changed(path: Path, how: str) -> ForkliftError:
    return ForkliftError(f"{path}: changed while it was read ({how}); read it again once it is written")


class _Text:
    """The file's bytes as the walk looks at them: read with pread, the block last read kept for the next look."""

    def __init__(self, path: Path, fd: int, size: int) -> None:
        self.path, self.fd, self.size = path, fd, size  # the size it was opened with
        self.start, self.block = 0, b""

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, span: slice) -> bytes:
        return self.read(span.start, span.stop)

    def read(self, start: int, end: int) -> bytes:
        """The bytes of [start, end), up to the size the file was opened with; a file now shorter is refused."""
        end = min(end, self.size)
        if start >= end:
            return b""
        if not (self.start <= start and end <= self.start + len(self.block)):
            want = max(end, min(start + BLOCK, self.size)) - start
            self.start, self.block = start, os.pread(self.fd, want, start)
            if len(self.block) != want:
                raise changed(self.path, f"{want - len(self.block):,} bytes gone at byte {start + len(self.block):,}")
        return self.block[start - self.start : end - self.start]

    def ahead(self, pos: int, bound: int, least: int = 1) -> tuple[int, int]:
        """Where in the block last read the bytes from `pos` short of `bound` lie, at least `least` of them (a
        block of that many, or BLOCK, read from `pos` when it holds fewer). Indices, not a slice: a look is a
        byte or a token, and a copy of the block's rest for each was most of a receipt's reading time."""
        if not (self.start <= pos and self.start + len(self.block) - pos >= least):
            self.read(pos, min(pos + max(least, BLOCK), bound))
        return pos - self.start, min(self.start + len(self.block), bound) - self.start

    def match(self, pattern: re.Pattern[bytes], pos: int, bound: int, unclosed: bool = False) -> int | None:
        """Where `pattern` (possessive: it ends where the text says) matched at `pos`, no further than `bound`,
        ends; None: no match. Read on while the match runs to the end of what was read (or, `unclosed`, while
        there is none yet: a string)."""
        bound, least = min(bound, self.size), 1
        while True:
            lo, hi = self.ahead(pos, bound, least)
            found = pattern.match(self.block, lo, hi)
            if self.start + hi == bound or (found.end() < hi if found else not unclosed):
                return self.start + found.end() if found else None
            least = max(4 * (hi - lo), BLOCK)

    def search(self, pattern: re.Pattern[bytes], pos: int, bound: int) -> int | None:
        """Where the first match of `pattern` (one byte) in [pos, bound) is; None: none there."""
        bound = min(bound, self.size)
        while pos < bound:
            lo, hi = self.ahead(pos, bound)
            found = pattern.search(self.block, lo, hi)
            if found:
                return self.start + found.start()
            pos = self.start + hi
        return None


def _last_cut(text: bytes, before_later: bool = False) -> int:
    """Where in `text` (records from its start) the last `}` between two of them is, or -1: the last `},{`
    whose `{` opens with the first record's first key (the cell's other fields have `},{` too, but not before
    that key), looked for in the text's tail first: a window of records is cut near its end. `before_later`:
    the last one before a later cell's records begin (`[{` and that key), for a window that holds them too. A
    cut that still falls wrong fails to parse."""
    first = _FIRST_KEY.match(text)
    if first is None:
        return -1
    key = rb"[ \t\n\r]*+" + re.escape(first[1])
    cuts = re.compile(_CUT.pattern + key)
    if before_later:
        later = re.compile(rb"\[[ \t\n\r]*+\{" + key).search(text)
        return max(
            (found.start() for found in cuts.finditer(text, 0, later.start() if later else len(text))), default=-1
        )
    tail = BLOCK
    while True:
        start = max(0, len(text) - tail)
        found = [match.start() for match in cuts.finditer(text, start)]
        if found or start == 0:
            return found[-1] if found else -1
        tail *= 4


class RecordError(ValueError):
    """What the caller of the records raises for one of a batch's records: the one at `index` of the batch is
    not what it must be at `where` in it (`.chunks[0]`, or ""), for `why`."""

    def __init__(self, index: int, where: str, why: str) -> None:
        super().__init__(f"{index}{where}: {why}")
        self.index, self.where, self.why = index, where, why


class _TooLong(ForkliftError):
    """A value longer than what it may take: the walk stopped there."""


class _Scan:
    """One pass over the file's bytes, descending only along root -> body -> cells -> requests."""

    def __init__(self, path: Path, data: _Text, decoder: msgspec.json.Decoder[Any], records: Records) -> None:
        self.path, self.data, self.decoder, self.records = path, data, decoder, records
        self.done = 0  # records of the cell handed on so far
        self.limit = max_file_bytes()
        self.outside = 0  # bytes read whole: everything but the records

    def fail(self, why: str, at: int) -> ForkliftError:
        return ForkliftError(f"{self.path}: not a readable receipt: {why} (at byte {at:,})")

    def document(self) -> Any:
        pos = self.space(0)
        if self.data[pos : pos + 1] == b"{":
            raw, pos = self.object(pos, 0, self.root_member)
        else:
            raw, pos = self.whole(pos, 0)
        if self.space(pos) != len(self.data):
            raise self.fail("text after the receipt", self.space(pos))
        return raw

    def space(self, pos: int) -> int:
        """Past the whitespace at `pos`; more of it than the size limit is refused (the file is read only so far)."""
        end = self.data.match(_SPACE, pos, pos + self.limit) or pos
        if end == pos + self.limit:
            raise ForkliftError(f"{self.path}: whitespace at byte {pos:,} runs over the {limit_words(self.limit)}")
        return end

    def string_end(self, pos: int, bound: int) -> int:
        end = self.data.match(_STRING, pos, bound, unclosed=True)
        if end is None:
            raise self.over(pos, bound) or self.fail("a string that never ends (truncated?)", pos)
        return end

    def over(self, pos: int, bound: int) -> _TooLong | None:
        """The error of a value that runs past `bound` (what it may take) before the end of the file."""
        if bound >= len(self.data):
            return None
        return _TooLong(f"{self.path}: the value at byte {pos:,} runs over the {limit_words(self.limit)}")

    def value_end(self, pos: int, above: int, most: int) -> int:
        """Where the value at `pos` ends, walked structure by structure (strings skipped whole); a value longer
        than `most` bytes is refused once that much is read: the walk never reads further into the file."""
        data, bound = self.data, pos + most + 1
        head = data[pos : pos + 1]
        if head == b'"':
            return self.string_end(pos, bound)
        if head not in (b"[", b"{"):
            end = data.match(_SCALAR, pos, bound)
            if end is None:
                raise self.fail("expected a value" if pos < len(data) else "it ends early (truncated?)", pos)
            if end == bound:
                raise self.over(pos, bound) or self.fail("it ends early (truncated?)", pos)
            return end
        depth, start = 0, pos
        while True:
            at = data.search(_STRUCTURE, pos, bound)
            if at is None:
                raise self.over(start, bound) or self.fail("it ends inside a value (truncated?)", len(data))
            char = data[at : at + 1]
            if char == b'"':  # a string
                pos = self.string_end(at, bound)
                continue
            pos = at + 1
            depth += 1 if char in b"[{" else -1
            if depth + above > MAX_DEPTH:
                raise self.fail(f"nested more than {MAX_DEPTH} levels", at)
            if depth == 0:
                return pos

    def whole(self, pos: int, above: int) -> tuple[Any, int]:
        """The value at `pos` parsed whole by the strict parser; it counts toward the size limit."""
        outside = ForkliftError(f"{self.path}: receipt is over the {limit_words(self.limit)} outside its records")
        try:
            end = self.value_end(pos, above, self.limit - self.outside)
        except _TooLong:
            raise outside from None
        self.outside += end - pos
        if self.outside > self.limit:
            raise outside
        return loads_json(self.data[pos:end], str(self.path), "receipt", above=above), end

    def object(self, pos: int, above: int, member: Member) -> tuple[dict[str, Any], int]:
        """The object at `pos`, each member's value read by `member(key, position, levels above it, so far)`."""
        data, out = self.data, dict[str, Any]()
        pos = self.space(pos + 1)
        if data[pos : pos + 1] == b"}":
            return out, pos + 1
        while True:
            if data[pos : pos + 1] != b'"':
                raise self.fail("expected a key", pos)
            end = self.string_end(pos, pos + self.limit - self.outside + 1)
            try:
                key = json.loads(data[pos:end])
            except ValueError as exc:
                raise self.fail(f"a key that is not a JSON string ({exc})", pos) from None
            self.outside += end - pos
            pos = self.space(end)
            if data[pos : pos + 1] != b":":
                raise self.fail("expected ':'", pos)
            out[key], pos = member(key, self.space(pos + 1), above + 1, out)
            pos = self.space(pos)
            if data[pos : pos + 1] == b"}":
                return out, pos + 1
            if data[pos : pos + 1] != b",":
                raise self.fail("expected ',' or '}'", pos)
            pos = self.space(pos + 1)

    def is_(self, pos: int, char: bytes) -> bool:
        return self.data[pos : pos + 1] == char

    def root_member(self, key: str, pos: int, above: int, so_far: dict[str, Any]) -> tuple[Any, int]:
        if key == "body" and so_far.get("kind") == "bench" and self.is_(pos, b"{"):
            return self.object(pos, above, self.body_member)
        return self.whole(pos, above)

    def body_member(self, key: str, pos: int, above: int, so_far: dict[str, Any]) -> tuple[Any, int]:
        if key != "cells" or not self.is_(pos, b"["):
            return self.whole(pos, above)
        cells: list[Any] = []
        pos = self.space(pos + 1)
        while not self.is_(pos, b"]"):
            if self.is_(pos, b"{"):
                cell, pos = self.object(pos, above + 1, self.cell_member(len(cells)))
            else:
                cell, pos = self.whole(pos, above + 1)
            cells.append(cell)
            pos = self.space(pos)
            if self.is_(pos, b","):
                pos = self.space(pos + 1)
            elif not self.is_(pos, b"]"):
                raise self.fail("expected ',' or ']' between cells", pos)
        return cells, pos + 1

    def cell_member(self, index: int) -> Member:
        def member(key: str, pos: int, above: int, _: dict[str, Any]) -> tuple[Any, int]:
            if key == "requests" and self.is_(pos, b"["):
                return [], self.stream(pos, index)
            return self.whole(pos, above)

        return member

    def stream(self, pos: int, cell: int) -> int:
        """Hand the records of the array at `pos` to the caller, batch by batch; returns where the array ends."""
        pos = self.space(pos + 1)
        self.done = 0
        if self.is_(pos, b"]"):
            return pos + 1
        while True:
            batch, pos = self.batch(pos, cell)
            try:
                self.records(cell, batch)
            except RecordError as exc:
                raise self.invalid(f"cells.{cell}.requests.{self.done + exc.index}{exc.where}: {exc.why}") from None
            except ValueError as exc:
                raise self.invalid(f"cells.{cell}.requests: {exc}") from None
            self.done += len(batch)
            pos = self.space(pos)
            if self.is_(pos, b"]"):
                return pos + 1
            if not self.is_(pos, b","):
                raise self.fail("expected ',' or ']' between request records", pos)
            pos = self.space(pos + 1)

    def batch(self, pos: int, cell: int) -> tuple[list[Any], int]:
        """The records from `pos` up to a cut inside the window, and where the last of them ends."""
        window = pos + min(WINDOW, self.limit)  # a record over the limit is walked, so refused
        text = self.data.read(pos, window)
        tried = set()
        for before_later in (False, True):  # the cut near the window's end; if it fails, one before a later cell
            cut = _last_cut(text, before_later)
            if cut > 0 and cut not in tried:
                tried.add(cut)
                try:
                    return self.parse(pos, pos + cut + 1, cell), pos + cut + 1
                except msgspec.DecodeError:
                    pass  # not between two records after all (a string, a later cell's): walk the window instead
        end = self.record_end(pos)
        while end < window:
            after = self.space(end)
            if not self.is_(after, b","):
                break
            end = self.record_end(self.space(after + 1))
        try:
            return self.parse(pos, end, cell), end
        except msgspec.DecodeError as exc:
            raise self.fail(f"{exc} in the request records from here", pos) from None

    def record_end(self, pos: int) -> int:
        try:
            return self.value_end(pos, 5, self.limit)  # 5 above: root, body, cells, the cell, requests
        except _TooLong:
            raise ForkliftError(
                f"{self.path}: a request record at byte {pos:,} is over the {limit_words(self.limit)}"
            ) from None

    def parse(self, start: int, end: int, cell: int) -> list[Any]:
        """The records in data[start:end], decoded: a DecodeError when that is not whole records."""
        text = bytearray(end - start + 2)
        text[0], text[-1] = ord("["), ord("]")
        if (got := os.preadv(self.data.fd, [memoryview(text)[1:-1]], start)) != end - start:
            raise changed(self.path, f"{end - start - got:,} bytes gone at byte {start + got:,}")
        if end - start > WINDOW:  # one record larger than a window: its parsed objects are bounded as a file's are
            check_expansion(bytes(text), str(self.path), "receipt")
        try:
            batch: list[Any] = self.decoder.decode(text)
        except msgspec.ValidationError as exc:  # whole records (the JSON parsed), of the wrong shape
            why, _, at = str(exc).partition(" - at `$")
            found = re.match(r"\[(\d+)\](.*)`", at)
            where = f"{self.done + int(found[1])}{found[2]}" if found else ""
            raise self.invalid(f"cells.{cell}.requests.{where}: {why}") from None
        return batch

    def invalid(self, what: str) -> ForkliftError:
        return invalid(self.path, what)


def invalid(path: Path, what: str) -> ForkliftError:
    """A record that is not what it must be; `what` holds the file's text (a key): shown on one line."""
    return ForkliftError(f"{path}: invalid bench body at {terminal(what)}")
