"""Bench receipts as samples: kept requests keyed for pairing, and the labels rows are grouped by.

A request is keyed by (prompt id, kept-run ordinal, occurrence): the same
prompt in the k-th kept run on each side is one pair. Ordinals rather than
raw run indexes so a bench that kept run 1 pairs with one that kept run 2,
and several receipts of one setting simply add runs.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from forklift.bench.schema import BenchBody, Cell
from forklift.receipts import Receipt, validated_body
from forklift.receipts.store import receipt_paths
from forklift.receipts.stream import read_receipt_streaming
from forklift.stats.divergence import TextCodes, TextHashes, TextKey
from forklift.stats.requests import Record, RecordBudget, RecordColumns, RequestColumns, columns_of
from forklift.stats.runs import ReceiptRun, validated_runs


@dataclass(frozen=True)
class BenchRun(ReceiptRun[BenchBody]):
    """One bench receipt with its body validated, each cell's requests as columns (its records let go)."""

    columns: dict[str, RequestColumns] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # records still in the body (a receipt read whole, or built in memory) become columns once
        for cell in self.body.cells:
            if cell.name not in self.columns:
                self.columns[cell.name] = columns_of(cell.requests)

    @property
    def label(self) -> str:
        """What a reader calls this side: the user's --label, else the build; with the served model."""
        return f"{self.body.label or self.build} · {self.body.model}"

    def cell(self, name: str) -> Cell | None:
        return next((cell for cell in self.body.cells if cell.name == name), None)

    def requests(self, name: str) -> RequestColumns | None:
        return self.columns.get(name) if self.cell(name) is not None else None

    def kept_runs(self, name: str) -> list[int]:
        """The runs statistics use: those the bench kept, or every run when it did not say."""
        cell, columns = self.cell(name), self.columns.get(name)
        if cell is None or columns is None:
            return []
        return sorted(set(cell.kept_runs or columns.run.tolist()))

    def kept_rows(self, name: str) -> np.ndarray:
        """The rows of a cell's requests that belong to its kept runs."""
        columns = self.columns.get(name)
        if columns is None:
            return np.array([], dtype=np.int64)
        return np.flatnonzero(np.isin(columns.run, self.kept_runs(name)))


def without_records(body: BenchBody) -> BenchBody:
    return body.model_copy(update={"cells": [cell.model_copy(update={"requests": []}) for cell in body.cells]})


def bench_runs(receipts: list[tuple[Path, Receipt]]) -> list[BenchRun]:
    """The bench receipts among `receipts`, bodies validated (other kinds are skipped), records as columns.

    Each run's receipt keeps its envelope only, and its body no records: a receipt of a million requests
    is gigabytes of parsed JSON and models, its columns about 90 MB.
    """
    runs = validated_runs(receipts, ("bench",), BenchRun, BenchBody)
    return [
        BenchRun(run.path, run.receipt.model_copy(update={"body": {}}), without_records(run.body), run.columns)
        for run in runs
    ]


def read_bench_runs(paths: list[Path]) -> tuple[list[BenchRun], list[tuple[Path, Receipt]]]:
    """Receipts from files and folders, each bench cell's records streamed into columns (bounded memory):
    the bench runs, oldest first, and every receipt read (bench ones with their envelope only)."""
    runs, receipts = [], []
    for path in receipt_paths(paths):
        built: dict[int, RecordColumns] = {}
        receipt = read_receipt_streaming(path, Record, _keeper(built, RecordBudget()))
        if receipt.kind == "bench":
            body = validated_body(path, receipt, BenchBody)
            columns = {cell.name: built[i].columns() for i, cell in enumerate(body.cells) if i in built}
            receipt = receipt.model_copy(update={"body": {}})
            runs.append(BenchRun(path, receipt, body, columns))
        receipts.append((path, receipt))
        give_back_freed()
    runs.sort(key=lambda found: (found.receipt.created, str(found.path)))
    return runs, receipts


def give_back_freed() -> None:
    """Hand the C heap's free pages back to the system (glibc's malloc_trim; nothing elsewhere): what is kept
    between large temporaries (a receipt's columns between its batches, a cell's sides between the arrays they
    are built from) pins the heap they were made in, leaving tens of MB a million records free but resident."""
    trim = getattr(_LIBC, "malloc_trim", None)
    if trim is not None:
        trim(0)


_LIBC = ctypes.CDLL(None)


def _keeper(built: dict[int, RecordColumns], budget: RecordBudget) -> Callable[[int, list[Any]], None]:
    def keep(cell: int, batch: list[Any]) -> None:
        built.setdefault(cell, RecordColumns(budget)).add(batch)

    return keep


def text_hashes(runs: list[BenchRun], cell_name: str, codes: TextCodes) -> TextHashes:
    """A cell's ok requests with an output hash (warm-up runs included): the exact text each sent, and its hash.

    The text is its prompt, plus its salt's inputs when salted: the bench derives each salt from
    (nonce, cell, run, prompt id), so a salted prompt is the same text only for the same nonce, cell and run.
    """
    texts, outputs = [], []
    for run in runs:
        columns = run.requests(cell_name)
        if columns is None or not len(columns):
            continue
        named = np.array([codes.output(h) if h else -1 for h in columns.outputs] + [-1], dtype=np.int64)
        output = named[columns.output]  # a row without a hash reads the -1 at the end
        rows = columns.ok & (output >= 0)
        workload, first = run.body.workload, int(columns.run.min())
        salted, span = workload.salted, int(columns.run.max()) - first + 1
        text = columns.prompt[rows].astype(np.int64) * span + (columns.run[rows] - first) * salted  # (prompt, run)
        distinct, inverse = np.unique(text, return_inverse=True)
        keys: list[TextKey] = [
            (columns.prompt_ids[k // span], workload.salt_nonce, cell_name, k % span + first)
            if salted
            else columns.prompt_ids[k // span]
            for k in distinct.tolist()
        ]
        texts.append(np.array([codes.text(key) for key in keys], dtype=np.int32)[inverse.ravel()])
        outputs.append(output[rows].astype(np.int32))
    empty = np.array([], dtype=np.int32)
    return TextHashes(np.concatenate(texts or [empty]), np.concatenate(outputs or [empty]))


def output_throughput(runs: list[BenchRun], cell_name: str) -> float | None:
    """Output tok/s of a cell: completion tokens over wall time per kept run, averaged over kept runs."""
    rates = []
    for run in runs:
        columns = run.requests(cell_name)
        if columns is None:
            continue
        tokens = columns.completion_tokens
        counted = columns.ok & ~np.isnan(tokens) & (tokens != 0)
        for index in run.kept_runs(cell_name):
            done = counted & (columns.run == index)
            span = float(columns.end[done].max() - columns.send[done].min()) if done.any() else 0.0
            if span:  # first send to last end (records of one run share a time base)
                rates.append(float(tokens[done].sum()) / span)
    return sum(rates) / len(rates) if rates else None


@dataclass(frozen=True)
class TtftSplit:
    """The engine's own TTFT over a side's kept runs and the engine core's share of it (vLLM's histograms' means)."""

    ttft_ms: float
    queue_ms: float  # waiting to be scheduled
    prefill_ms: float  # scheduled until the step that made the first token

    @property
    def frontend_ms(self) -> float:
        """The rest: taking the request in, the hop to the engine core and back, the first token out."""
        return self.ttft_ms - self.queue_ms - self.prefill_ms


def server_ttft_split(runs: list[BenchRun], cell_name: str) -> TtftSplit | None:
    """Request-weighted means of the engine's TTFT, queue and prefill over the kept runs that read all three."""
    count = ttft = queue = prefill = 0.0
    for run in runs:
        cell = run.cell(cell_name)
        kept = set(run.kept_runs(cell_name))
        for facts in cell.run_facts if cell else []:
            server = facts.server
            if facts.run not in kept or server is None or not server.requests:
                continue
            if server.ttft_mean_ms is None or server.queue_mean_ms is None or server.prefill_mean_ms is None:
                continue
            count += server.requests
            ttft += server.ttft_mean_ms * server.requests
            queue += server.queue_mean_ms * server.requests
            prefill += server.prefill_mean_ms * server.requests
    return TtftSplit(ttft / count, queue / count, prefill / count) if count else None


def server_tok_step(runs: list[BenchRun], cell_name: str) -> float | None:
    """tok/step = 1 + accepted / drafts from the server's counter deltas over the kept runs (None: no drafts)."""
    drafts = accepted = 0.0
    for run in runs:
        cell = run.cell(cell_name)
        delta = cell.metrics_delta if cell else {}
        drafts += float(delta.get("spec_drafts") or 0)
        accepted += float(delta.get("spec_accepted_tokens") or 0)
    return 1.0 + accepted / drafts if drafts else None
