"""The engine's own requirements between two pins: read from the real vLLM 0.32.0 and 0.33.0 sdists' PKG-INFO,
shown by `flip` and by `check` (against the last check of another pin), kernel-cache companions first."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from forklift.engines import engine_adapter
from forklift.errors import ForkliftError
from forklift.source.requirements import read_requirements
from tests.cli import EXAMPLE, forklift

VLLM = engine_adapter("vllm")


@pytest.fixture
def example(tmp_path: Path) -> Path:
    dist = tmp_path / "dist"
    shutil.copytree(EXAMPLE, dist, ignore=shutil.ignore_patterns("receipts"))
    return dist


def by_name(changes: list[dict]) -> dict[str, dict]:
    return {c["name"]: c for c in changes}


@pytest.mark.network
def test_flip_names_the_requirement_changes_and_the_caches_they_make_cold(example: Path):
    report_md = example / "flip.md"
    proc = forklift("-c", example, "flip", "0.33.0", "--json", "--report", report_md)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["requirements_skipped"] is None
    changes = by_name(report["requirements"])
    torch, flashinfer = changes["torch"], changes["flashinfer-python"]
    assert (torch["old"], torch["new"]) == ("==2.13.0", "==2.14.0") and "torch.compile" in torch["cache"]
    assert (flashinfer["old"], flashinfer["new"]) == ("==0.7.0.post1", "==0.7.2.post1")
    assert "FlashInfer JIT kernel" in flashinfer["cache"]
    assert changes["certifi"]["old"] is None  # new in 0.33.0
    assert changes["pillow"]["cache"] == ""  # no kernels
    assert not any(k.startswith("xgrammar") for k in changes)  # 0.2.8 in both
    assert [c["name"] for c in report["requirements"][:2]] == ["flashinfer-python", "torch"]  # cold caches first
    markdown = report_md.read_text()
    assert "## Engine requirements" in markdown and "2 with kernel caches to rebuild" in markdown
    assert "- torch ==2.13.0 → ==2.14.0: torch.compile" in markdown


@pytest.mark.network
def test_check_notes_what_changed_since_the_last_check_of_another_pin(example: Path):
    first = forklift("-c", example, "check", "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["requirement_changes"] == []  # no earlier pin checked here
    assert json.loads(first.stdout)["requirements"]["pins"]["torch"] == "==2.13.0"
    moved = forklift("-c", example, "flip", "0.33.0", "--write")
    assert moved.returncode == 0, moved.stderr
    for _ in range(2):  # still said on the next check of the same pin: the last other pin is unchanged
        proc = forklift("-c", example, "check", "--fresh")
        assert proc.returncode == 0, proc.stderr
        assert "since vllm 0.32.0 sdist (checked " in proc.stdout
        assert "requirement torch ==2.13.0 → ==2.14.0: torch.compile" in proc.stdout
        assert "12 other requirement(s) changed: aiohttp, certifi" in proc.stdout
    report = json.loads(forklift("-c", example, "check", "--json", "--fresh").stdout)
    assert report["requirements_since"] == "vllm 0.32.0 sdist"
    assert by_name(report["requirement_changes"])["flashinfer-python"]["new"] == "==0.7.2.post1"


def test_a_git_checkout_reads_the_requirement_files_the_adapter_names(tmp_path: Path):
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "cuda.txt").write_text("-r common.txt\ntorch==2.14.0  # pinned\n--extra-index-url x\n")
    (tmp_path / "requirements" / "common.txt").write_text("xgrammar == 0.2.8; platform_machine == 'x86_64'\n")
    found = read_requirements(tmp_path, VLLM)
    assert found is not None and found.source == "requirements/cuda.txt"
    assert found.pins == {"torch": "==2.14.0", 'xgrammar; platform_machine == "x86_64"': "==0.2.8"}
    assert read_requirements(tmp_path, None) is None  # a generic engine names no files


def test_hostile_requirement_sources_are_one_line(tmp_path: Path):
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "cuda.txt").write_text("-r ../../outside.txt\n")
    with pytest.raises(ForkliftError, match=r"includes requirements/\.\./\.\./outside\.txt, outside the tree$"):
        read_requirements(tmp_path, VLLM)
    (tmp_path / "requirements" / "cuda.txt").write_text("-r cuda.txt\n-r a.txt\n")
    (tmp_path / "requirements" / "a.txt").write_text("torch\n")
    assert read_requirements(tmp_path, VLLM).pins == {"torch": ""}  # a file including itself is read once
    os.mkfifo(tmp_path / "PKG-INFO")  # would block a plain open forever
    with pytest.raises(ForkliftError, match="PKG-INFO: not a regular file"):
        read_requirements(tmp_path, VLLM)
    (tmp_path / "PKG-INFO").unlink()
    (tmp_path / "PKG-INFO").write_text("Requires-Dist: a\n" * 5001)
    with pytest.raises(ForkliftError, match="more than 5000 requirements"):
        read_requirements(tmp_path, VLLM)
    (tmp_path / "PKG-INFO").unlink()
    (tmp_path / "PKG-INFO").symlink_to("/etc/hostname")
    with pytest.raises(ForkliftError, match="PKG-INFO: package metadata is a symlink"):
        read_requirements(tmp_path, VLLM)
