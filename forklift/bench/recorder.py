"""The growing bench receipt: every finished request lands in it, and it is on disk as it grows.

Rewritten atomically (at most every `interval` seconds while requests stream in, and at
every cell end), so a dead server or a Ctrl-C leaves a readable receipt holding every
completed record; `finish` stamps the final status.
"""

from __future__ import annotations

import time
from pathlib import Path

from forklift.bench.schema import BenchBody, Cell
from forklift.client.records import RequestRecord
from forklift.receipts import Receipt, write_receipt
from forklift.receipts.envelope import Status


class BenchRecorder:
    def __init__(self, receipt: Receipt, body: BenchBody, folder: Path, interval: float = 0.5):
        self.receipt = receipt
        self.body = body
        self.folder = folder
        self.interval = interval
        self.path: Path | None = None
        self._written = 0.0
        self.receipt.status = "partial"  # until finish() says otherwise
        self.flush()

    def add(self, cell: Cell, record: RequestRecord) -> None:
        cell.requests.append(record)
        if time.monotonic() - self._written >= self.interval:
            self.flush()

    def flush(self) -> Path:
        self.receipt.body = self.body.model_dump(mode="json")
        self.path = write_receipt(self.receipt, self.folder, self.path)
        self._written = time.monotonic()
        return self.path

    def finish(self, status: Status) -> Path:
        self.receipt.status = status
        return self.flush()
