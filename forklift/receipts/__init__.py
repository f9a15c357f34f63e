"""Receipts: the one versioned JSON envelope every measuring command writes, and reads back."""

from forklift.receipts.envelope import Fingerprint, Labels, Receipt, fingerprint, new_receipt
from forklift.receipts.store import read_receipts, receipts_folder, validated_body, write_receipt

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
