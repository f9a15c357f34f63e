"""Python source and engine folders nested past what a recursive walk or Python's own parser can follow are one
line naming the file (flip and knobs read every module of both trees), never a RecursionError."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from forklift.engines.vllm import VLLM
from forklift.errors import ForkliftError
from forklift.fsio import MAX_WALK_DEPTH
from forklift.installed.package import InstalledPackage
from forklift.knobs import Registry, registry
from forklift.knobs.overlay import patched_registry
from forklift.series.apply import Overlay
from forklift.series.check import compile_findings

# Python builds this expression's tree one level per `+`: its parser gives up past about a thousand.
DEEP_SOURCE = b"import os\nX = os.environ.get('VLLM_X') or " + b"+".join([b"a"] * 100_000) + b"\n"


def engine_tree(tmp_path: Path) -> Path:
    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "envs.py").write_text("environment_variables = {'VLLM_A': lambda: 1}\n")
    return tmp_path


def deep_folder(top: Path, levels: int) -> Path:
    """`top/a/a/.../a` made one level at a time, relative to the last (no path is ever longer than a name)."""
    fd = os.open(top, os.O_RDONLY)
    try:
        for _ in range(levels):
            os.mkdir("a", dir_fd=fd)
            inner = os.open("a", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.open("x.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as handle:
            handle.write("import os\nos.environ.get('VLLM_Y')\n")
    finally:
        os.close(fd)
    return top


def test_a_module_nested_too_deep_to_parse_is_one_line(tmp_path):
    tree = engine_tree(tmp_path)
    (tree / "vllm" / "deep.py").write_bytes(DEEP_SOURCE)
    with pytest.raises(ForkliftError) as caught:
        registry(tree, VLLM)
    assert str(caught.value) == f"{tree / 'vllm' / 'deep.py'}: nested too deeply for Python's parser"


def test_a_series_that_writes_such_a_module_is_named_as_after_the_series(tmp_path):
    with pytest.raises(ForkliftError, match=r"^vllm/deep\.py: nested too deeply for Python's parser after the series$"):
        patched_registry(Registry(tmp_path, ("VLLM_A",), ()), {"vllm/deep.py": DEEP_SOURCE}, VLLM)


def test_check_reports_it_as_a_file_that_does_not_compile():
    (finding,) = compile_findings(Overlay(lambda path: None, {"vllm/deep.py": DEEP_SOURCE}))
    assert finding.subject == "vllm/deep.py" and finding.message.startswith("vllm/deep.py:?: RecursionError: ")


def test_engine_folders_nested_too_deep_are_one_line():
    # Outside pytest's temp folders: their clean-up (shutil.rmtree) recurses once per level, and a tree left
    # by a killed run would break every later session's start. GNU rm removes it.
    top = Path(tempfile.mkdtemp(prefix="forklift-deep-"))
    try:
        tree = engine_tree(top)
        deep_folder(tree / "vllm", 1100)
        with pytest.raises(ForkliftError, match=rf"^{tree / 'vllm'}: folders nested more than {MAX_WALK_DEPTH} deep"):
            registry(tree, VLLM)
        installed = InstalledPackage(tree, "vllm", tree / "vllm-1.dist-info", {})
        with pytest.raises(ForkliftError, match=rf"folders nested more than {MAX_WALK_DEPTH} deep"):
            installed.files()
    finally:
        subprocess.run(["rm", "-rf", str(top)], check=True)
