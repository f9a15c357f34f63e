"""The knob registry read from the real vLLM 0.32.0 / 0.33.0 sdists, and from a patched copy."""

from __future__ import annotations

import shutil

import pytest

from forklift.engines.vllm import VLLM
from forklift.errors import ForkliftError
from forklift.knobs import Registry, compare, registry
from forklift.knobs.overlay import patched_registry

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def pristine(vllm_032_tree):
    return registry(vllm_032_tree.path, VLLM)


def test_registry_of_real_032_counts_the_dict_keys(pristine, vllm_032_tree):
    # Cross-check against a plain text count of the dict's `"VLLM_...": lambda` entries.
    text = (vllm_032_tree.path / "vllm" / "envs.py").read_text()
    body = text.split("environment_variables: dict[str, Callable[[], Any]] = {", 1)[1].split("\n}\n", 1)[0]
    keys = {line.split('"')[1] for line in body.splitlines() if line.startswith('    "') and '":' in line}
    assert set(pristine.names) == keys
    assert len(pristine.names) == 316
    assert "VLLM_CPU_KVCACHE_SPACE" in pristine.names


def test_bypass_reads_are_found_with_file_and_line(pristine, vllm_032_tree):
    unregistered = {(r.path, r.name) for r in pristine.unregistered}
    assert ("vllm/utils/ompmultiprocessing.py", "VLLM_CPU_SIM_MULTI_NUMA") in unregistered
    for read in pristine.bypass:
        line = (vllm_032_tree.path / read.path).read_text().splitlines()[read.line - 1]
        assert read.name in line, str(read)
        assert read.path != "vllm/envs.py"


def test_a_series_that_adds_a_bare_read_and_a_knob_is_seen(pristine, vllm_032_tree, tmp_path):
    tree = tmp_path / "patched"
    shutil.copytree(vllm_032_tree.path / "vllm", tree / "vllm", ignore=shutil.ignore_patterns("*.so"))
    envs = tree / "vllm" / "envs.py"
    text = envs.read_text()
    text = text.replace(
        "environment_variables: dict[str, Callable[[], Any]] = {\n",
        'environment_variables: dict[str, Callable[[], Any]] = {\n    "VLLM_FORKLIFT_EXAMPLE": lambda: os.getenv("VLLM_FORKLIFT_EXAMPLE"),\n',
        1,
    )
    envs.write_text(text)
    sched = tree / "vllm" / "v1" / "core" / "sched" / "scheduler.py"
    sched.write_text(sched.read_text() + '\n\n_HIDDEN = os.environ.get("VLLM_FORKLIFT_HIDDEN", "0")\n')
    patched = registry(tree, VLLM)
    diff = compare(pristine, patched)
    assert diff.added == ("VLLM_FORKLIFT_EXAMPLE",)
    assert diff.removed == ()
    assert [(r.path, r.name, r.registered) for r in diff.introduced] == [
        ("vllm/v1/core/sched/scheduler.py", "VLLM_FORKLIFT_HIDDEN", False)
    ]
    assert diff.introduced_unregistered == diff.introduced


def test_knobs_between_real_releases(pristine, vllm_033_tree):
    newer = registry(vllm_033_tree.path, VLLM)
    diff = compare(pristine, newer)
    assert set(newer.names) == (set(pristine.names) | set(diff.added)) - set(diff.removed)
    assert diff.added or diff.removed  # 0.33.0 changed the registry


def test_a_tree_without_the_registry_file_is_refused(tmp_path):
    (tmp_path / "vllm").mkdir()
    with pytest.raises(ForkliftError, match=r"vllm/envs.py: no knob registry file"):
        registry(tmp_path, VLLM)


def test_a_module_the_series_breaks_is_named_as_after_the_series(tmp_path):
    pristine = Registry(tmp_path, ("VLLM_A",), ())
    with pytest.raises(ForkliftError, match=r"^vllm/x\.py:\d+: not valid Python after the series: "):
        patched_registry(pristine, {"vllm/x.py": b"import os\nos.environ.get('VLLM_B'\n"}, VLLM)
