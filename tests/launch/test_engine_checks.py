"""A resolved profile checked against the real installed engine: its own --help flags and its knob registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from forklift.config.profile import Profile
from forklift.engines.vllm import VLLM
from forklift.errors import UsageError
from forklift.installed.package import site_from_python
from forklift.knobs.flags import capture_flags
from forklift.knobs.registry import registry
from forklift.launch.engine_checks import check_flags, check_knobs, legacy_warnings
from forklift.launch.resolve import parse_sets, resolve
from tests.fixtures.engine_install import cache_root

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def flags(engine_python):
    return capture_flags(str(engine_python), VLLM, cache_root())


@pytest.fixture(scope="module")
def knobs(engine_python):
    return registry(site_from_python(Path(engine_python), "vllm"), VLLM, reads=False)


def resolved(**changes):
    sets = changes.pop("sets", [])
    profile = Profile.model_validate({"model": "m", "args": {"enforce-eager": True}, **changes})
    choices, overrides = parse_sets(sets)
    return resolve({"p": profile}, "p", choices, overrides, VLLM)


def test_help_is_captured_once_per_version(flags, engine_python):
    assert flags.version == "0.32.0+cpu"
    assert (cache_root() / "engine-help" / "vllm-0.32.0+cpu.txt").is_file()
    assert flags.flags["--enforce-eager"].takes_value is False
    assert flags.flags["--max-model-len"].takes_value is True
    assert "bfloat16" in flags.flags["--dtype"].choices
    check_flags(resolved(args={"speculative-config": {"method": "ngram"}, "dtype": "bfloat16"}), flags)


def test_a_flag_the_engine_does_not_know_is_refused_with_the_closest(flags):
    with pytest.raises(
        UsageError,
        match=r"profile p \(profile p\): --max-modle-len is not a flag of the engine "
        r"0.32.0\+cpu \(closest: --max-model-len\)",
    ):
        check_flags(resolved(args={"max-modle-len": 4096}), flags)


def test_a_switch_given_a_value_is_refused(flags):
    with pytest.raises(UsageError, match=r"--enforce-eager is a switch, got the value '3'"):
        check_flags(resolved(args={"enforce-eager": 3}), flags)


def test_a_value_flag_given_a_boolean_is_refused(flags):
    with pytest.raises(UsageError, match=r"\(--set\): --max-model-len needs a value, got a bare switch"):
        check_flags(resolved(sets=["args.max-model-len=true"]), flags)


def test_a_value_outside_the_engine_choices_is_refused(flags):
    with pytest.raises(UsageError, match=r"--dtype 'fp7' is not one of auto, bfloat16"):
        check_flags(resolved(args={"dtype": "fp7"}), flags)


def test_the_series_knob_is_registered_a_made_up_one_is_not(knobs):
    # The engine carries the example series: its VLLM_LOG_KV_CACHE_BLOCKS is a registered knob.
    check_knobs(resolved(env={"VLLM_LOG_KV_CACHE_BLOCKS": "1", "OMP_NUM_THREADS": "1"}), VLLM, knobs)
    with pytest.raises(
        UsageError,
        match=r"VLLM_LOG_KV_CACHE_BLOKS is not a knob registered in vllm/envs.py "
        r"of the engine \(closest: VLLM_LOG_KV_CACHE_BLOCKS\)",
    ):
        check_knobs(resolved(env={"VLLM_LOG_KV_CACHE_BLOKS": "1"}), VLLM, knobs)


def test_legacy_variable_shadowed_by_a_flag_is_warned():
    alone = legacy_warnings(resolved(env={"VLLM_CPU_KVCACHE_SPACE": "1"}), VLLM)
    assert alone == ["VLLM_CPU_KVCACHE_SPACE is a legacy variable shadowing --kv-cache-memory-bytes: prefer the flag"]
    both = legacy_warnings(resolved(env={"VLLM_CPU_KVCACHE_SPACE": "1"}, args={"kv-cache-memory-bytes": "2G"}), VLLM)
    assert both and "both set" in both[0]
