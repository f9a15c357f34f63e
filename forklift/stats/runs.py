"""Receipts read as runs: a receipt with its body validated, and the labels a comparison row names it by.

Bench runs (`sample.BenchRun`) and quality/canary runs (`quality.SuiteRun`) read the
same envelope fields (box, build, setting); they are read here, once.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from forklift.receipts import Receipt, validated_body
from forklift.receipts.envelope import default_build, setting_label

BodyT = TypeVar("BodyT", bound=BaseModel)
RunT = TypeVar("RunT", bound="ReceiptRun[Any]")


def build_label(receipt: Receipt) -> str:
    """Which engine build measured a receipt: its label, else engine version plus the overlay hash when patched."""
    if receipt.build:
        return receipt.build
    version = receipt.engine_version or (receipt.pin or {}).get("version")
    return default_build(str(version) if version else None, receipt.overlay_hash)


@dataclass(frozen=True)
class ReceiptRun(Generic[BodyT]):
    """One receipt with its body validated as its kind's schema."""

    path: Path
    receipt: Receipt
    body: BodyT

    @property
    def machine_id(self) -> str:
        return self.receipt.fingerprint.machine_id

    @property
    def hostname(self) -> str:
        return self.receipt.fingerprint.hostname

    @property
    def build(self) -> str:
        return build_label(self.receipt)

    @property
    def setting(self) -> str:
        return setting_label(self.receipt)


def validated_runs(
    receipts: list[tuple[Path, Receipt]], kinds: Collection[str], run: type[RunT], body: type[BaseModel]
) -> list[RunT]:
    """The receipts of `kinds` among `receipts` as `run`s, bodies validated as `body`, oldest first."""
    runs = [run(path, r, validated_body(path, r, body)) for path, r in receipts if r.kind in kinds]
    return sorted(runs, key=lambda found: (found.receipt.created, str(found.path)))
