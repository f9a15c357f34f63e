"""The real vLLM sdists from PyPI, through the index, into the user's cache (warm after the first run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from forklift.errors import UnreachableError
from forklift.source.cache import default_cache
from forklift.source.index import resolve_pypi_file
from forklift.source.materialize import materialize
from tests.fixtures.pypi import VLLM_032, VLLM_033

pytestmark = pytest.mark.network


def test_vllm_032_sdist_tree(vllm_032_tree):
    tree = vllm_032_tree
    assert (tree.kind, tree.digest, tree.label) == ("sdist", VLLM_032.sha256, "vllm 0.32.0 sdist")
    assert (tree.path / "vllm" / "envs.py").is_file()  # top folder vllm-0.32.0/ stripped: patches say a/vllm/...
    assert not (tree.path / "vllm-0.32.0").exists()
    assert "\nVersion: 0.32.0\n" in (tree.path / "PKG-INFO").read_text()


def test_vllm_033_sdist_tree(vllm_033_tree):
    assert vllm_033_tree.digest == VLLM_033.sha256
    assert "\nVersion: 0.33.0\n" in (vllm_033_tree.path / "PKG-INFO").read_text()
    assert (vllm_033_tree.path / "vllm" / "envs.py").is_file()


def test_warm_hit_is_offline(vllm_032_tree, dead_index):
    again = materialize(VLLM_032, Path.cwd(), default_cache(), index_url=dead_index)
    assert again == vllm_032_tree


def test_index_lists_the_pinned_sha256():
    try:
        found = resolve_pypi_file("vllm", "0.32.0")
    except UnreachableError as exc:
        pytest.skip(f"SKIPPED: the index is unreachable: {exc}")
    assert (found.filename, found.sha256) == ("vllm-0.32.0.tar.gz", VLLM_032.sha256)
    assert found.size == 44549956
