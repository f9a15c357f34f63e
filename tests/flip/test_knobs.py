"""The patched knob registry: the pristine registry with only the series' files re-read."""

from __future__ import annotations

import pytest

from forklift.engines.vllm import VLLM
from forklift.knobs import compare, registry
from forklift.knobs.overlay import patched_registry, pristine_registry
from forklift.source.cache import default_cache

pytestmark = pytest.mark.network

LOGGER = "vllm/logger.py"


def test_patched_registry_equals_a_full_read_of_the_patched_tree(vllm_032_tree, tmp_path):
    """Same answer as walking a patched copy, for a registered knob and a new bare read."""
    pristine = registry(vllm_032_tree.path, VLLM)
    envs = (vllm_032_tree.path / VLLM.registry_file).read_text()
    anchor = "environment_variables: dict[str, Callable[[], Any]] = {\n"
    assert envs.count(anchor) == 1
    files = {
        VLLM.registry_file: envs.replace(anchor, anchor + '    "VLLM_FORKLIFT_TEST": lambda: "1",\n').encode(),
        LOGGER: (vllm_032_tree.path / LOGGER).read_bytes() + b'\nDEBUG = os.environ.get("VLLM_FORKLIFT_BARE")\n',
    }
    fast = patched_registry(pristine, files, VLLM)
    copy = tmp_path / "tree"
    (copy / "vllm").mkdir(parents=True)
    for path in (vllm_032_tree.path / "vllm").rglob("*.py"):
        target = copy / path.relative_to(vllm_032_tree.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files.get(path.relative_to(vllm_032_tree.path).as_posix(), path.read_bytes()))
    full = registry(copy, VLLM)
    assert fast.names == full.names and "VLLM_FORKLIFT_TEST" in fast.names
    assert sorted(map(str, fast.bypass)) == sorted(map(str, full.bypass))
    introduced = compare(pristine, fast).introduced_unregistered
    assert [(r.name, r.path) for r in introduced] == [("VLLM_FORKLIFT_BARE", LOGGER)]


def test_pristine_registry_is_cached_by_tree(vllm_032_tree):
    first = pristine_registry(vllm_032_tree, VLLM, default_cache())
    again = pristine_registry(vllm_032_tree, VLLM, default_cache())
    assert again == first == registry(vllm_032_tree.path, VLLM)
