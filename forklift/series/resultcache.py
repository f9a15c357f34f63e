"""The whole-check result cache: a `forklift check` whose every input is unchanged is replayed, not rerun.

As make skips a target whose inputs did not change, and git's index skips a file whose stat did not, a
check that would read exactly what the last one read cannot come out differently; its stored output
and receipt are replayed instead of applying the series again.

An entry lives at `<cache>/checks/<key>.json`. Its key is the run's context (`run_context`): forklift's
version and the stat of its modules, Python's version, where rich, typer and pydantic are installed and
their stat, the command line and working folder, how the output is rendered (which streams are
terminals, their size and encoding, the variables rich reads), this machine's receipt fingerprint, and
the bytes of forklift.toml. The entry holds every other input the
check read (`recorded_inputs`), each read again before a replay: the sha256 of every file (the series
file, each patch, PATCHES.md, SHA256SUMS and the files it lists, each overlay file), the patch files
found in the series folder, the overlay folder's entries, and the pin: its tree in the cache and, for
a folder or tarball pin, its digest now (through the same stat memo the check uses). What the run
produced is stored with it: exit code, stdout, stderr and the receipt, whose id, time and file name
are slots that a replay fills anew. A git pin is never replayed: its check asks the remote whether
the tag moved, which no digest here can answer.

This module imports neither pydantic nor rich: a replay is a few reads, hashes and writes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import stat
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import forklift
from forklift.errors import ForkliftError
from forklift.fsio import write_atomic
from forklift.receipts.facts import json_time, machine_facts, new_id, receipt_name
from forklift.series.model import SERIES_FILE, patch_files
from forklift.source.cache import Cache
from forklift.source.hashing import directory_digest, file_sha256

if TYPE_CHECKING:
    from forklift.config import Config
    from forklift.series.check import Published
    from forklift.series.model import Series
    from forklift.source.materialize import Tree

FORMAT = 1  # of an entry; a new layout is a new key, never a misread entry
KEPT_ENTRIES = 256  # the most recently stored; older ones are removed when a check stores its own
# What rich reads from the environment to decide width, colour and terminal behaviour.
RENDER_ENV = frozenset(
    {
        "COLUMNS",
        "LINES",
        "JUPYTER_COLUMNS",
        "JUPYTER_LINES",
        "TERM",
        "COLORTERM",
        "NO_COLOR",
        "FORCE_COLOR",
        "TTY_COMPATIBLE",
        "TTY_INTERACTIVE",
        "DATABRICKS_RUNTIME_VERSION",
        "CI",
    }
)
RENDERING_LIBRARIES = ("rich", "typer", "pydantic", "pydantic_core")  # the table, the JSON and the receipt
ID_SLOT, CREATED_SLOT, NAME_SLOT = "\0id\0", "\0created\0", "\0receipt\0"


def run_context(argv: list[str], config_bytes: bytes) -> dict[str, Any]:
    """Everything a check's output depends on that is known before forklift.toml is parsed."""
    return {
        "format": FORMAT,
        "forklift": forklift.__version__,
        "modules": _modules_stamp(),
        "python": sys.version,
        "libraries": [_library(name) for name in RENDERING_LIBRARIES],
        "argv": argv,
        "cwd": os.getcwd(),
        "env": {k: v for k, v in os.environ.items() if k in RENDER_ENV or k.startswith("FORKLIFT_")},
        "streams": [_stream(fd, stream) for fd, stream in enumerate((sys.stdin, sys.stdout, sys.stderr))],
        "machine": machine_facts(),
        "config": hashlib.sha256(config_bytes).hexdigest(),
    }


def context_key(context: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(context, sort_keys=True).encode()).hexdigest()


def _modules_stamp() -> str:
    """forklift's own modules by path, size and mtime: an edited checkout is a new key, as a new version is."""
    package = Path(forklift.__file__).parent
    rows = []
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                info = os.stat(os.path.join(folder, name))
                rows.append(f"{os.path.relpath(os.path.join(folder, name), package)} {info.st_size} {info.st_mtime_ns}")
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def _library(name: str) -> list[Any]:
    """Where a library that shapes the output is installed, and its stat (an upgrade rewrites it); not imported."""
    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None else None
    if origin is None:
        return [name, None]
    info = os.stat(origin)
    return [name, origin, info.st_size, info.st_mtime_ns]


def _stream(fd: int, stream: Any) -> list[Any]:
    tty = os.isatty(fd)
    try:
        size = list(os.get_terminal_size(fd)) if tty else None
    except OSError:
        size = None
    return [tty, size, getattr(stream, "encoding", None), getattr(stream, "errors", None)]


def _sha(path: Path) -> str | None:
    """sha256 of a regular file's bytes (through links, as the check reads it); None when there is none."""
    try:
        return file_sha256(path) if path.is_file() else None
    except OSError:
        return None


def _overlay_entries(folder: Path) -> dict[str, str]:
    """Each entry below the overlay folder as the check reads it (by lstat): kind, execute bit, sha256."""
    entries = {}
    for path in sorted(folder.rglob("*")):
        mode = path.lstat().st_mode
        if stat.S_ISDIR(mode):
            continue
        kind = ("x" if mode & stat.S_IXUSR else "f") if stat.S_ISREG(mode) else f"special {mode:o}"
        entries[path.relative_to(folder).as_posix()] = f"{kind} {_sha(path) if stat.S_ISREG(mode) else ''}"
    return entries


def recorded_inputs(config: Config, series: Series, published: Published | None, tree: Tree) -> dict[str, Any] | None:
    """What the check read beyond forklift.toml, as `current_inputs` reads it again; None for a git pin."""
    if tree.kind == "git":
        return None
    files: dict[str, str | None] = {str(series.folder / SERIES_FILE): _sha(series.folder / SERIES_FILE)}
    files |= {str(series.folder / name): digest for name, digest in series.digests.items()}
    if config.patches_md is not None:
        files[str(config.patches_md)] = _sha(config.patches_md)
    files[str(config.digests_file)] = _sha(config.digests_file)
    if published is not None:
        files |= {str(published.where.parent / name): digest for name, digest in published.actual.items()}
    cached = None if tree.in_place else tree.path.name  # a folder pin read where it lies has no tree in the cache
    pin: dict[str, str | None] = {"tree": cached, "kind": tree.kind, "digest": tree.digest}
    if tree.kind in ("dir", "tarball"):
        from forklift.source.materialize import pinned_path

        pin["source"] = str(pinned_path(config.data.upstream, config.root))  # type: ignore[arg-type]
    overlay = config.overlay_dir
    return {
        "files": files,
        "patch_files": [str(series.folder), patch_files(series.folder)],
        "overlay": [str(overlay), _overlay_entries(overlay)] if overlay is not None else None,
        "pin": pin,
    }


def current_inputs(recorded: dict[str, Any], cache: Cache) -> dict[str, Any] | None:
    """The recorded inputs as they are now (equal to `recorded` when nothing changed); None when the
    pin's tree is gone from the cache (a folder pin read where it lies has none)."""
    pin = recorded["pin"]
    if pin["tree"] is not None and cache.cached_tree(pin["tree"]) is None:
        return None
    now = dict(pin)
    if pin["kind"] == "dir":
        source = Path(pin["source"])
        now["digest"] = directory_digest(source, memo=cache.listing_memo(source))
    elif pin["kind"] == "tarball":
        now["digest"] = file_sha256(Path(pin["source"]))
    folder, _ = recorded["patch_files"]
    overlay = recorded["overlay"]
    return {
        "files": {path: _sha(Path(path)) for path in recorded["files"]},
        "patch_files": [folder, patch_files(Path(folder))],
        "overlay": [overlay[0], _overlay_entries(Path(overlay[0]))] if overlay is not None else None,
        "pin": now,
    }


@dataclass(frozen=True)
class Replay:
    """What a replayed check writes: its streams, a fresh receipt at `receipt`, and its exit code."""

    stdout: str
    stderr: str
    receipt: Path
    receipt_text: str
    exit_code: int


def entry_path(cache: Cache, key: str) -> Path:
    return cache.root / "checks" / f"{key}.json"


def replay(cache: Cache, key: str, context: dict[str, Any]) -> Replay | None:
    """The stored check for this context, stamped anew, when every input it read is unchanged; else None."""
    try:
        entry = json.loads(entry_path(cache, key).read_bytes())
        if entry["context"] != context or current_inputs(entry["inputs"], cache) != entry["inputs"]:
            return None
    except (OSError, ValueError, KeyError, TypeError, ForkliftError):  # no entry, a damaged one, a gone input
        return None
    created = datetime.now(timezone.utc)
    receipt_id = new_id()
    name = receipt_name(created, "check", receipt_id)
    text = entry["receipt"].replace(ID_SLOT, receipt_id).replace(CREATED_SLOT, json_time(created))
    return Replay(
        stdout=entry["stdout"].replace(NAME_SLOT, name),
        stderr=entry["stderr"],
        receipt=Path(entry["receipts"]) / name,
        receipt_text=text,
        exit_code=entry["exit"],
    )


def write_replay(played: Replay) -> None:
    write_atomic(played.receipt, played.receipt_text)


def store(
    cache: Cache,
    key: str,
    context: dict[str, Any],
    inputs: dict[str, Any],
    outcome: tuple[int, str, str],
    receipt: Path,
) -> bool:
    """Store a finished check's (exit code, stdout, stderr) and receipt for replay; False (nothing
    stored) when the receipt's id, time or name cannot each be found exactly once to make slots of."""
    exit_code, stdout, stderr = outcome
    text = receipt.read_bytes().decode("utf-8", "surrogateescape")
    stamp = json.loads(text)
    receipt_id, created = stamp["id"], stamp["created"]
    fields = {f'"id": "{receipt_id}"': f'"id": "{ID_SLOT}"', f'"created": "{created}"': f'"created": "{CREATED_SLOT}"'}
    if json_time(datetime.fromisoformat(created.replace("Z", "+00:00"))) != created:
        return False  # a time this module would write differently: a replay could not match a fresh run
    if any(text.count(field) != 1 for field in fields) or stdout.count(receipt.name) != 1 or receipt.name in stderr:
        return False
    for field, slot in fields.items():
        text = text.replace(field, slot)
    entry = {
        "context": context,
        "inputs": inputs,
        "exit": exit_code,
        "stdout": stdout.replace(receipt.name, NAME_SLOT),
        "stderr": stderr,
        "receipts": str(receipt.parent),
        "receipt": text,
        "from": receipt.name,  # the run that stored it
    }
    with cache.lock(f"check-{key}"):
        write_atomic(entry_path(cache, key), json.dumps(entry))
    _prune(entry_path(cache, key).parent)
    return True


def _prune(folder: Path) -> None:
    """Keep the KEPT_ENTRIES newest entries (each distribution, command line and terminal has its own)."""
    entries = sorted(folder.glob("*.json"), key=_mtime)
    for old in entries[:-KEPT_ENTRIES]:
        old.unlink(missing_ok=True)


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:  # removed meanwhile by another check's prune
        return 0
