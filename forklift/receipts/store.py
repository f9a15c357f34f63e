"""Write receipts atomically and read them back from files or folders."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from forklift.errors import ForkliftError, validation_line
from forklift.fsio import read_json, write_atomic
from forklift.receipts.envelope import SCHEMA, Receipt


def receipts_folder(given: Path | None, config_file: Path | None) -> Path:
    """The one rule for where receipts go: the folder given (--receipts), else receipts/ beside
    forklift.toml when there is one, else ./receipts."""
    if given is not None:
        return given
    return config_file.parent / "receipts" if config_file is not None else Path("receipts")


def receipt_filename(receipt: Receipt) -> str:
    return f"{receipt.created:%Y%m%dT%H%M%S}-{receipt.kind}-{receipt.id}.json"


def write_receipt(receipt: Receipt, folder: Path, path: Path | None = None) -> Path:
    """Write (or rewrite, for a run that grows) a receipt; returns its path."""
    path = path or folder / receipt_filename(receipt)
    write_atomic(path, receipt.model_dump_json(by_alias=True, indent=2) + "\n")
    return path


def read_receipt(path: Path) -> Receipt:
    raw = read_json(path, "receipt")
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        found = raw.get("schema") if isinstance(raw, dict) else type(raw).__name__
        shown = repr(found) if len(repr(found)) <= 60 else repr(found)[:60] + "..."
        raise ForkliftError(f"{path}: schema {shown} is not {SCHEMA!r}")
    try:
        return Receipt.model_validate(raw)
    except ValidationError as exc:
        raise ForkliftError(f"{path}: invalid receipt at {validation_line(exc)}") from None


BodyModel = TypeVar("BodyModel", bound=BaseModel)


def validated_body(path: Path, receipt: Receipt, model: type[BodyModel]) -> BodyModel:
    """A receipt's body as its kind's schema, or one line naming the file and the key."""
    try:
        return model.model_validate(receipt.body)
    except ValidationError as exc:
        raise ForkliftError(f"{path}: invalid {receipt.kind} body at {validation_line(exc)}") from None


def read_receipts(paths: list[Path]) -> list[tuple[Path, Receipt]]:
    """Receipts from files and folders (folders recursively, *.json), in path order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.json") if not p.name.startswith(".")))
        elif path.exists():
            found.append(path)
        else:
            raise ForkliftError(f"{path}: no such receipt file or folder")
    return [(p, read_receipt(p)) for p in found]
