"""Bench receipts as samples: kept requests keyed for pairing, and the labels rows are grouped by.

A request is keyed by (prompt id, kept-run ordinal, occurrence): the same
prompt in the k-th kept run on each side is one pair. Ordinals rather than
raw run indexes so a bench that kept run 1 pairs with one that kept run 2,
and several receipts of one setting simply add runs.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from forklift.bench.aggregate import run_duration
from forklift.bench.schema import BenchBody, Cell
from forklift.client.records import RequestRecord
from forklift.receipts import Receipt
from forklift.stats.divergence import TextKey
from forklift.stats.runs import ReceiptRun, validated_runs

Key = tuple[str, int, int]


class BenchRun(ReceiptRun[BenchBody]):
    """One bench receipt with its body validated."""

    @property
    def label(self) -> str:
        """What a reader calls this side: the user's --label, else the build; with the served model."""
        return f"{self.body.label or self.build} · {self.body.model}"

    def cell(self, name: str) -> Cell | None:
        return next((cell for cell in self.body.cells if cell.name == name), None)


def bench_runs(receipts: list[tuple[Path, Receipt]]) -> list[BenchRun]:
    """The bench receipts among `receipts`, bodies validated (other kinds are skipped).

    Each run's receipt keeps its envelope only: the validated body replaces the raw one, which for a
    receipt of a million requests is gigabytes of parsed JSON held twice.
    """
    runs = validated_runs(receipts, ("bench",), BenchRun, BenchBody)
    return [BenchRun(run.path, run.receipt.model_copy(update={"body": {}}), run.body) for run in runs]


def kept_run_indexes(cell: Cell) -> list[int]:
    """The runs statistics use: those the bench kept, or every run when it did not say."""
    return sorted(cell.kept_runs) if cell.kept_runs else sorted({record.run for record in cell.requests})


def kept_requests(runs: list[BenchRun], cell_name: str) -> dict[Key, RequestRecord]:
    """Every kept request of a cell across the group's receipts, keyed for pairing."""
    keyed: dict[Key, RequestRecord] = {}
    ordinal = 0
    for run in runs:
        cell = run.cell(cell_name)
        if cell is None:
            continue
        for index in kept_run_indexes(cell):
            seen: Counter[str] = Counter()
            for record in cell.requests:
                if record.run == index:
                    keyed[(record.prompt_id, ordinal, seen[record.prompt_id])] = record
                    seen[record.prompt_id] += 1
            ordinal += 1
    return keyed


def text_key(run: BenchRun, cell_name: str, record: RequestRecord) -> TextKey:
    """What identifies the exact text a request sent: its prompt, plus its salt's inputs when salted.

    The bench derives each salt from (nonce, cell, run, prompt id), so a salted
    prompt is the same text only for the same nonce, cell and run index.
    """
    workload = run.body.workload
    if not workload.salted:
        return (record.prompt_id,)
    return (record.prompt_id, workload.salt_nonce, cell_name, record.run)


def requests_by_text(runs: list[BenchRun], cell_name: str) -> dict[TextKey, list[RequestRecord]]:
    """Every request of a cell (warm-up runs included) grouped by the exact text it sent."""
    grouped: dict[TextKey, list[RequestRecord]] = {}
    for run in runs:
        cell = run.cell(cell_name)
        for record in cell.requests if cell else []:
            grouped.setdefault(text_key(run, cell_name, record), []).append(record)
    return grouped


def output_throughput(runs: list[BenchRun], cell_name: str) -> float | None:
    """Output tok/s of a cell: completion tokens over wall time per kept run, averaged over kept runs."""
    rates = []
    for run in runs:
        cell = run.cell(cell_name)
        if cell is None:
            continue
        for index in kept_run_indexes(cell):
            done = [r for r in cell.requests if r.run == index and r.ok and r.completion_tokens]
            span = run_duration(done)
            if span:
                rates.append(sum(r.completion_tokens or 0 for r in done) / span)
    return sum(rates) / len(rates) if rates else None


def server_tok_step(runs: list[BenchRun], cell_name: str) -> float | None:
    """tok/step = 1 + accepted / drafts from the server's counter deltas over the kept runs (None: no drafts)."""
    drafts = accepted = 0.0
    for run in runs:
        cell = run.cell(cell_name)
        delta = cell.metrics_delta if cell else {}
        drafts += float(delta.get("spec_drafts") or 0)
        accepted += float(delta.get("spec_accepted_tokens") or 0)
    return 1.0 + accepted / drafts if drafts else None
