"""`forklift upstream-tests`: the engine's own pytest files that cover what the series touches, run on the
patched tree against the installed engine that carries the series, with a receipt of every outcome.

Which files: each test file of the pinned release (`tests/**/test_*.py`, `*_test.py`) that imports a module
the series touches, or lives beside it (in its folder, or in the mirror of its folder under `tests/`). They
run from a scratch copy of the patched tree's `tests/` (and its pytest configuration), so `import vllm`
finds the installed engine, which is verified to carry the series first: the tests exercise what ships.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, Field

from forklift.config import Config
from forklift.errors import ForkliftError, UsageError
from forklift.fsio import read_bounded, tree_reader
from forklift.receipts import new_receipt, write_receipt
from forklift.series.apply import apply_series
from forklift.series.model import Series
from forklift.source.cache import default_cache
from forklift.source.materialize import materialize

TESTS = "tests"
PYTEST_CONFIG = ("pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini")  # where pytest reads its settings
MAX_TEST_FILE = 4 << 20  # a test module larger than this is not parsed for its imports
MAX_JUNIT = 64 << 20
MAX_FILES = 20000  # test files walked in a release's tests/
PROBE = "import pytest"


@dataclass(frozen=True)
class Selected:
    path: str  # tests/v1/core/test_scheduler.py
    reasons: tuple[str, ...]  # 'imports vllm.v1.core.sched.scheduler', 'beside vllm/v1/core/sched/scheduler.py'


class Outcome(BaseModel):
    test: str  # tests/v1/core/test_scheduler.py::test_x[param]
    reason: str


class SelectedFile(BaseModel):
    path: str
    reasons: list[str]


class UpstreamTestsBody(BaseModel):
    python: str
    tree: str  # the release the tests come from, e.g. "vllm 0.32.0 sdist"
    files: list[SelectedFile]
    collected: int
    passed: int
    failed: int
    errors: int
    skipped: int
    skips: list[Outcome] = Field(default_factory=list)
    failures: list[Outcome] = Field(default_factory=list)  # failed and errored, with pytest's message
    pytest_exit: int  # 0 all passed, 1 some failed, 2 interrupted, 3 internal error, 4 usage, 5 none collected
    seconds: float
    log: str  # pytest's whole output

    @property
    def ok(self) -> bool:
        return self.collected > 0 and not self.failed and not self.errors and self.pytest_exit == 0


def module_name(path: str) -> str | None:
    """'vllm/v1/core/sched/scheduler.py' -> 'vllm.v1.core.sched.scheduler'; None for a non-module path."""
    parts = PurePosixPath(path)
    if parts.suffix != ".py" or not all(p.isidentifier() for p in parts.with_suffix("").parts):
        return None
    names = list(parts.with_suffix("").parts)
    return ".".join(names[:-1] if names[-1] == "__init__" else names)


def imported_modules(source: bytes) -> set[str]:
    """Every absolute module a test file imports: `import a.b` gives a.b; `from a.b import c` gives a.b and
    a.b.c (c may be a module). A file that does not parse imports nothing forklift can name."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def is_test_file(path: str) -> bool:
    name = PurePosixPath(path).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def select_tests(touched: list[str], tests: dict[str, bytes]) -> list[Selected]:
    """The test files (path -> source) that import a touched module or live beside one (pure)."""
    modules = {name: path for path in touched if (name := module_name(path))}
    folders = {}
    for path in modules.values():
        folder = PurePosixPath(path).parent
        folders[folder] = path
        if len(folder.parts) > 1:  # vllm/v1/core/sched -> tests/v1/core/sched (the package name dropped)
            folders[PurePosixPath(TESTS, *folder.parts[1:])] = path
    chosen = []
    for test_path in sorted(tests):
        imports = imported_modules(tests[test_path])
        reasons = [f"imports {name}" for name in sorted(modules) if name in imports]
        beside = folders.get(PurePosixPath(test_path).parent)
        if beside:
            reasons.append(f"beside {beside}")
        if reasons:
            chosen.append(Selected(test_path, tuple(reasons)))
    return chosen


def touched_modules(series: Series, only: list[str]) -> list[str]:
    """The Python files the series changes outside tests/, limited to `only` when given (each must be one)."""
    touched = sorted({p for patch in series.patches for p in patch.paths if p.endswith(".py")})
    touched = [p for p in touched if not p.startswith(f"{TESTS}/")]
    for wanted in only:
        if wanted not in touched:
            raise UsageError(
                f"--only {wanted!r}: not a Python file the series touches ({', '.join(touched) or 'none'})"
            )
    return [p for p in touched if p in only] if only else touched


def _walk_tests(tree: Path) -> Iterator[str]:
    root = tree / TESTS
    count = 0
    for folder, dirs, files in os.walk(root):  # links to folders are not followed
        dirs.sort()
        for name in sorted(files):
            count += 1
            if count > MAX_FILES:
                raise ForkliftError(f"{root}: more than {MAX_FILES} files; not a test folder forklift walks")
            path = Path(folder, name)
            if is_test_file(name) and not path.is_symlink():
                yield path.relative_to(tree).as_posix()


def read_tests(tree: Path, overlay_files: dict[str, bytes | None]) -> dict[str, bytes]:
    """The patched tree's test files (path -> source), each read up to MAX_TEST_FILE bytes."""
    found: dict[str, bytes] = {}
    for path in _walk_tests(tree):
        if (tree / path).stat().st_size <= MAX_TEST_FILE:
            found[path] = read_bounded(tree / path, "test file", MAX_TEST_FILE)
    for path, content in overlay_files.items():
        if path.startswith(f"{TESTS}/") and is_test_file(path):
            if content is None:
                found.pop(path, None)
            else:
                found[path] = content
    return found


def patched_tests(tree: Path, series: Series, scratch: Path) -> dict[str, bytes]:
    """Copy the patched tree's tests/ and pytest configuration to `scratch`; the test files by path.

    Refused when the series does not land on the tree as it is (the check gate would fail too)."""
    results, overlay = apply_series(tree_reader(tree), series.patches, series.applier)
    broken = [p.name for p, r in zip(series.patches, results, strict=True) if r.status not in ("exact", "offset")]
    if broken:
        raise ForkliftError(f"the series does not land on {tree}: {', '.join(broken)} (run forklift check)")
    if (tree / TESTS).is_dir():
        shutil.copytree(tree / TESTS, scratch / TESTS, symlinks=True)
    for name in PYTEST_CONFIG:
        if (tree / name).is_file() and not (tree / name).is_symlink():
            shutil.copy2(tree / name, scratch / name)
    for path, content in overlay.files.items():
        if path.startswith(f"{TESTS}/") or path in PYTEST_CONFIG:
            (scratch / path).unlink(missing_ok=True)
            if content is not None:
                (scratch / path).parent.mkdir(parents=True, exist_ok=True)
                (scratch / path).write_bytes(content)
    return read_tests(tree, overlay.files)


def check_pytest(python: str) -> None:
    try:
        probe = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ForkliftError(f"engine python {python}: cannot run it ({exc})") from None
    if probe.returncode != 0:
        raise ForkliftError(f"engine python {python}: pytest is not installed there: {python} -m pip install pytest")


def run_pytest(
    python: str, scratch: Path, files: list[str], keyword: str | None, timeout: float, log: Path
) -> tuple[int, Path, float]:
    """pytest over `files` in `scratch` (output to `log`); (its exit code, the JUnit file, seconds)."""
    junit = scratch / ".forklift-junit.xml"
    argv = [python, "-m", "pytest", "-p", "no:cacheprovider", "-rs", f"--junitxml={junit}", "-o", "junit_family=xunit1"]
    argv += ["-k", keyword] if keyword else []
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.monotonic()
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        try:
            done = subprocess.run(
                [*argv, "--", *files], cwd=scratch, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            raise ForkliftError(f"the engine's tests ran past {timeout:g} s (--timeout); output in {log}") from None
    return done.returncode, junit, time.monotonic() - start


def read_junit(junit: Path) -> dict[str, list[Outcome]]:
    """pytest's JUnit XML (bounded) as outcomes by kind: passed, failed, errors, skipped."""
    found: dict[str, list[Outcome]] = {"passed": [], "failed": [], "errors": [], "skipped": []}
    if not junit.is_file():
        return found  # pytest stopped before writing one (a usage error): its exit code says so
    try:
        root = ET.fromstring(read_bounded(junit, "JUnit report", MAX_JUNIT))
    except ET.ParseError as exc:
        raise ForkliftError(f"{junit}: pytest's JUnit report does not parse: {exc}") from None
    for case in root.iter("testcase"):
        name = f"{case.get('file') or case.get('classname', '')}::{case.get('name', '')}"
        for tag, kind in (("skipped", "skipped"), ("failure", "failed"), ("error", "errors")):
            if (mark := case.find(tag)) is not None:
                found[kind].append(Outcome(test=name, reason=_reason(mark.get("message") or mark.text or "")))
                break
        else:
            found["passed"].append(Outcome(test=name, reason=""))
    return found


def _reason(text: str) -> str:
    return " ".join(text.split())[:500]


@dataclass(frozen=True)
class UpstreamTestsResult:
    body: UpstreamTestsBody
    receipt: Path
    log: Path


def run_upstream_tests(
    config: Config,
    python: str,
    series: Series,
    *,
    only: list[str],
    match: list[str],
    keyword: str | None,
    timeout: float,
    receipts: Path,
    listing: bool = False,
) -> UpstreamTestsResult | list[Selected]:
    """Select the engine's tests for the series' modules; with `listing`, return the selection only."""
    touched = touched_modules(series, only)
    tree = materialize(config.data.upstream, config.root)
    with default_cache().scratch() as scratch:
        tests = patched_tests(tree.path, series, scratch)
        chosen = [
            s for s in select_tests(touched, tests) if not match or any(fnmatch.fnmatch(s.path, m) for m in match)
        ]
        if listing:
            return chosen
        if not chosen:
            raise ForkliftError(
                f"no test file of {tree.label} imports or sits beside {', '.join(touched) or 'a touched module'}"
            )
        check_pytest(python)
        log = receipts / "logs" / f"{time.strftime('%Y%m%dT%H%M%S')}-upstream-tests.log"
        code, junit, seconds = run_pytest(python, scratch, [s.path for s in chosen], keyword, timeout, log)
        outcomes = read_junit(junit)
    body = UpstreamTestsBody(
        python=python,
        tree=tree.label,
        files=[SelectedFile(path=s.path, reasons=list(s.reasons)) for s in chosen],
        collected=sum(len(v) for v in outcomes.values()),
        passed=len(outcomes["passed"]),
        failed=len(outcomes["failed"]),
        errors=len(outcomes["errors"]),
        skipped=len(outcomes["skipped"]),
        skips=outcomes["skipped"],
        failures=outcomes["failed"] + outcomes["errors"],
        pytest_exit=code,
        seconds=round(seconds, 1),
        log=str(log),
    )
    receipt = new_receipt(
        "upstream-tests",
        status="ok" if body.ok else "failed",
        pin=config.data.upstream.model_dump(),
        body=body.model_dump(),
    )
    return UpstreamTestsResult(body, write_receipt(receipt, receipts), log)
