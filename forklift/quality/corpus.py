"""Perplexity corpora: user files pinned by sha256, cut into fixed windows.

A corpus is refused when its bytes no longer match the pin (an edited corpus is a
different benchmark), and flagged when it lies inside the engine under test: a code
corpus globbed from the engine changes with the pin, so its perplexity is no A/B number.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from forklift.config import Config
from forklift.errors import ConfigError, ForkliftError


@dataclass(frozen=True)
class Corpus:
    name: str
    path: Path
    sha256: str
    text: str

    def identity(self) -> dict[str, str]:
        return {"name": self.name, "path": str(self.path), "sha256": self.sha256}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def jsonl_rows(path: Path, text: str, keys: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) for each non-blank JSONL line; a line that is no object with string `keys` is named."""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ForkliftError(f"{path}:{number}: not JSON: {exc}") from None
        if not isinstance(row, dict) or not all(isinstance(row.get(key), str) for key in keys):
            raise ForkliftError(f"{path}:{number}: expected string keys {' and '.join(map(repr, keys))}")
        yield number, row


def _documents(path: Path, data: bytes, fmt: str, field: str) -> str:
    """The corpus as one text: a text file as it is, JSONL documents joined by a blank line."""
    text = data.decode("utf-8")
    if fmt == "text":
        return text
    return "\n\n".join(row[field] for _, row in jsonl_rows(path, text, (field,)))


def load_corpus(name: str, path: Path, sha256: str, fmt: str | None = None, field: str = "text") -> Corpus:
    """Read and verify a corpus; a changed byte is refused naming the corpus, its file and both hashes."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"quality.corpora.{name}: cannot read {path}: {exc.strerror}") from None
    found = hashlib.sha256(data).hexdigest()
    if found != sha256:
        raise ForkliftError(
            f"quality.corpora.{name}: {path} has sha256 {found}, pinned {sha256}: "
            "the corpus changed (re-pin it deliberately if the change is meant)"
        )
    try:
        text = _documents(path, data, fmt or ("jsonl" if path.suffix == ".jsonl" else "text"), field)
    except UnicodeDecodeError as exc:
        raise ForkliftError(f"quality.corpora.{name}: {path} is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not text.strip():
        raise ForkliftError(f"quality.corpora.{name}: {path} holds no text")
    return Corpus(name, path, sha256, text)


def corpus_from_config(config: Config, name: str) -> Corpus:
    corpora = config.data.quality.corpora
    if name not in corpora:
        known = ", ".join(sorted(corpora)) or "none"
        raise ConfigError(f"--corpus {name!r}: not in [quality.corpora] of {config.path} (known: {known})")
    entry = corpora[name]
    path = Path(entry.path)
    path = path if path.is_absolute() else config.root / path
    return load_corpus(name, path, entry.sha256, entry.format, entry.field)


def inside(path: Path, roots: tuple[Path, ...]) -> Path | None:
    """The engine root that holds `path`, if any (symlinks resolved on both sides)."""
    real = path.resolve()
    for root in roots:
        if real.is_relative_to(root.resolve()):
            return root
    return None


def spans(length: int, size: int) -> list[tuple[int, int]]:
    """Consecutive, non-overlapping [start, end) windows over `length` characters or tokens; the last may be shorter."""
    if size < 1:
        raise ForkliftError(f"window size {size}: must be at least 1")
    return [(start, min(start + size, length)) for start in range(0, length, size)]
