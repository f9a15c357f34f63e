"""Write receipts atomically and read them back from files or folders."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from forklift.errors import ForkliftError, validation_line
from forklift.fsio import write_atomic
from forklift.receipts.envelope import SCHEMA, Receipt
from forklift.receipts.facts import receipt_name
from forklift.receipts.packed import PACKED_SUFFIX, read_receipt_json

SCHEMA_1 = "forklift.receipt/1"
LADDER_KINDS = ("ladder", "ladder-cell")  # their bodies name the ladder's setting and each cell's: a ladder's data


def receipts_folder(given: Path | None, config_file: Path | None) -> Path:
    """The one rule for where receipts go: the folder given (--receipts), else receipts/ beside
    forklift.toml when there is one, else ./receipts."""
    if given is not None:
        return given
    return config_file.parent / "receipts" if config_file is not None else Path("receipts")


def receipt_filename(receipt: Receipt) -> str:
    return receipt_name(receipt.created, receipt.kind, receipt.id)


def write_receipt(receipt: Receipt, folder: Path, path: Path | None = None) -> Path:
    """Write (or rewrite, for a run that grows) a receipt; returns its path."""
    path = path or folder / receipt_filename(receipt)
    write_atomic(path, receipt.model_dump_json(by_alias=True, indent=2) + "\n")
    return path


def from_schema_1(raw: dict[str, Any]) -> dict[str, Any]:
    """A /1 receipt as /2: the setting, which /1 could state in the envelope, the body (and the
    boot facts inside it) and as the profile's name, kept once in the envelope, in that order."""
    body = raw.get("body")
    body = dict(body) if isinstance(body, dict) else body
    stated = body.pop("setting", None) if isinstance(body, dict) and raw.get("kind") not in LADDER_KINDS else None
    if isinstance(body, dict) and isinstance(body.get("boot"), dict):
        body["boot"] = {k: v for k, v in body["boot"].items() if k != "setting"}
    profile = raw.get("profile")
    named = profile.get("name") if isinstance(profile, dict) else None
    return {**raw, "schema": SCHEMA, "setting": raw.get("setting") or stated or named, "body": body}


def read_receipt(path: Path) -> Receipt:
    return receipt_from_json(path, read_receipt_json(path))


def receipt_from_json(path: Path, raw: Any) -> Receipt:
    """A receipt from its parsed JSON (a /1 receipt read as /2), or one line naming the file and the key."""
    if isinstance(raw, dict) and raw.get("schema") == SCHEMA_1:
        raw = from_schema_1(raw)
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        found = raw.get("schema") if isinstance(raw, dict) else type(raw).__name__
        shown = repr(found) if len(repr(found)) <= 60 else repr(found)[:60] + "..."
        raise ForkliftError(f"{path}: schema {shown} is not {SCHEMA!r} (or {SCHEMA_1!r})")
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
    """Receipts from files and folders (folders recursively, *.json and packed *.json.gz), in path order."""
    return [(p, read_receipt(p)) for p in receipt_paths(paths)]


def receipt_paths(paths: list[Path]) -> list[Path]:
    """The receipt files of files and folders (folders recursively, *.json and *.json.gz), in path order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(receipts_in(path, "**/*"))
        elif path.exists():
            found.append(path)
        else:
            raise ForkliftError(f"{path}: no such receipt file or folder")
    return found


def receipts_in(folder: Path, pattern: str) -> list[Path]:
    """The receipts in `folder` whose name without its suffix matches `pattern` (a glob; `**/` for subfolders),
    written (NAME.json) or packed (NAME.json.gz), in path order; hidden files (a writer's scratch) left out."""
    return sorted(
        p for suffix in (".json", PACKED_SUFFIX) for p in folder.glob(pattern + suffix) if not p.name.startswith(".")
    )
