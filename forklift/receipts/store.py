"""Write receipts atomically and read them back from files or folders."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path

from pydantic import ValidationError

from forklift.errors import ForkliftError
from forklift.receipts.envelope import SCHEMA, Receipt


def receipt_filename(receipt: Receipt) -> str:
    return f"{receipt.created:%Y%m%dT%H%M%S}-{receipt.kind}-{receipt.id}.json"


def write_atomic(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """Write via a temp file in the same folder and rename: a reader never sees half a file.

    Text is written as UTF-8. The file keeps the mode it had, or gets the one a plain open() would
    give (0666 less the umask), unless `mode` says otherwise: mkstemp alone would leave it 0600.
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")  # patches keep non-UTF-8 bytes
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode if mode is not None else _mode_for(path))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mode_for(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_receipt(receipt: Receipt, folder: Path, path: Path | None = None) -> Path:
    """Write (or rewrite, for a run that grows) a receipt; returns its path."""
    path = path or folder / receipt_filename(receipt)
    write_atomic(path, receipt.model_dump_json(by_alias=True, indent=2) + "\n")
    return path


def read_receipt(path: Path) -> Receipt:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ForkliftError(f"{path}: not a readable receipt: {exc}") from None
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        found = raw.get("schema") if isinstance(raw, dict) else type(raw).__name__
        raise ForkliftError(f"{path}: schema {found!r} is not {SCHEMA!r}")
    try:
        return Receipt.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise ForkliftError(f"{path}: invalid receipt at {key}: {first['msg']}") from None


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
