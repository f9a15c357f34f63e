"""`forklift upstream-tests`: vLLM 0.32.0's own pytest files for the modules the example series touches, run
from the patched tree against the CPU engine that carries the series; the selection rules on their own."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from forklift.installed.upstream_tests import imported_modules, module_name, select_tests
from tests.cli import EXAMPLE, forklift
from tests.fixtures.engine_install import ensure_pytest

SCHEDULER = "vllm/v1/core/sched/scheduler.py"


def test_a_test_file_is_chosen_when_it_imports_a_touched_module_or_sits_beside_it():
    assert module_name(SCHEDULER) == "vllm.v1.core.sched.scheduler"
    assert module_name("vllm/v1/__init__.py") == "vllm.v1" and module_name("docs/x.md") is None
    assert imported_modules(b"from vllm.v1.core.sched import scheduler\nfrom . import x\n") == {
        "vllm.v1.core.sched",
        "vllm.v1.core.sched.scheduler",
    }
    assert imported_modules(b"def broken(:\n") == set()
    tests = {
        "tests/v1/core/sched/test_a.py": b"import os\n",  # the mirror of the module's folder
        "tests/v1/core/test_b.py": b"import vllm.v1.core.sched.scheduler as s\n",
        "tests/v1/core/test_c.py": b"from vllm.v1.core.sched.output import X\n",  # a sibling module: not chosen
    }
    chosen = {s.path: s.reasons for s in select_tests([SCHEDULER], tests)}
    assert chosen == {
        "tests/v1/core/sched/test_a.py": (f"beside {SCHEDULER}",),
        "tests/v1/core/test_b.py": ("imports vllm.v1.core.sched.scheduler",),
    }


@pytest.fixture()
def example(tmp_path: Path) -> Path:
    copy = tmp_path / "dist"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("receipts"))
    return copy


def test_bad_input_is_one_line(example: Path, tmp_path: Path):
    proc = forklift("-c", example, "upstream-tests", tmp_path, "--list")
    assert (
        proc.returncode == 2
        and proc.stderr.strip() == f"error: {tmp_path}: not a venv or a python to run the engine's tests with"
    )


@pytest.mark.network
def test_only_names_a_file_the_series_touches(example: Path):
    proc = forklift("-c", example, "upstream-tests", sys.executable, "--list", "--only", "vllm/x.py")
    assert proc.returncode == 2 and proc.stderr.startswith(
        "error: --only 'vllm/x.py': not a Python file the series touches ("
    )


@pytest.mark.engine
def test_the_engines_own_tests_run_on_the_patched_tree_with_a_receipt(example: Path, engine_python: Path):
    ensure_pytest(engine_python)
    listed = forklift("-c", example, "upstream-tests", engine_python, "--list", "--only", SCHEDULER)
    assert listed.returncode == 0, listed.stderr
    assert "tests/v1/core/test_scheduler.py: imports vllm.v1.core.sched.scheduler" in listed.stdout
    picked = ("tests/v1/core/test_priority_preemption_bug.py", "tests/distributed/test_symm_mem_allreduce.py")
    proc = forklift(
        "-c", example, "upstream-tests", engine_python, "--json", *(a for p in picked for a in ("--match", p))
    )
    body = json.loads(proc.stdout)
    assert sorted(f["path"] for f in body["files"]) == sorted(picked)
    assert body["collected"] == 3 == body["passed"] + body["failed"] + body["errors"] + body["skipped"]
    assert body["skipped"] == 2  # CUDA-only on the CPU engine, each with pytest's reason
    assert {s["reason"] for s in body["skips"]} == {"SymmMemAllreduce is only available for CUDA platforms."}
    assert proc.returncode == (0 if body["ok"] else 1)
    assert [f["test"] for f in body["failures"]] == [
        t for t in (f["test"] for f in body["failures"]) if "test_priority_preemption_bug" in t
    ]
    receipt = json.loads(Path(body["receipt"]).read_text())
    assert receipt["kind"] == "upstream-tests" and receipt["body"]["skips"] == body["skips"]
    assert receipt["pin"]["version"] == "0.32.0" and Path(body["log"]).is_file()
