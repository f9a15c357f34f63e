"""The growing bench receipt: every finished request lands in it, and it is on disk as it grows.

Rewritten atomically while requests stream in and at every cell end, so a dead server or a Ctrl-C leaves a readable receipt holding every
completed record; `finish` stamps the final status. A rewrite blocks the event loop
(serializing every record so far), so rewrites are spaced to at least 20x the time the
last one took: the bookkeeping stays under ~5% of the loop however large the receipt.
"""

from __future__ import annotations

import time
from pathlib import Path

from forklift.bench.schema import BenchBody, Cell
from forklift.client.records import RequestRecord
from forklift.errors import interrupt_point
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
        self._cost = 0.0  # seconds the last rewrite took
        self.receipt.status = "partial"  # until finish() says otherwise
        self.flush()

    def add(self, cell: Cell, record: RequestRecord) -> None:
        cell.requests.append(record)
        interrupt_point("bench-request")
        if time.monotonic() - self._written >= max(self.interval, 20 * self._cost):
            self.flush()

    def flush(self) -> Path:
        started = time.monotonic()
        self.receipt.body = self.body.model_dump(mode="json")
        self.path = write_receipt(self.receipt, self.folder, self.path)
        self._written = time.monotonic()
        self._cost = self._written - started
        return self.path

    def finish(self, status: Status) -> Path:
        self.receipt.status = status
        return self.flush()
