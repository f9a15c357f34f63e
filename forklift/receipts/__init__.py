"""Receipts: the one versioned JSON envelope every measuring command writes, and reads back.

The names below are loaded on first use, so that importing forklift.receipts.facts (a replayed check
stamping a receipt) does not import pydantic with the envelope.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forklift.receipts.envelope import Fingerprint, Labels, Receipt, fingerprint, new_receipt
    from forklift.receipts.store import read_receipts, receipts_folder, validated_body, write_receipt

_HOME = {
    "Fingerprint": "envelope",
    "Labels": "envelope",
    "Receipt": "envelope",
    "fingerprint": "envelope",
    "new_receipt": "envelope",
    "read_receipts": "store",
    "receipts_folder": "store",
    "validated_body": "store",
    "write_receipt": "store",
}
__all__ = [
    "Fingerprint",
    "Labels",
    "Receipt",
    "fingerprint",
    "new_receipt",
    "read_receipts",
    "receipts_folder",
    "validated_body",
    "write_receipt",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
