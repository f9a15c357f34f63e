"""`forklift launch PROFILE --print` for every profile and axis choice of the example, with no engine installed."""

from __future__ import annotations

import itertools
import os
import sys

import pytest

from forklift.config import load_config
from tests.cli import EXAMPLE, forklift


def settings() -> list[tuple[str, tuple[str, ...]]]:
    from forklift.launch.resolve import flatten

    profiles = load_config(EXAMPLE).data.profiles
    out = []
    for name in profiles:
        axes = flatten(profiles, name).axes
        for combo in itertools.product(*([f"{axis}={choice}" for choice in choices] for axis, choices in axes.items())):
            out.append((name, combo))
    return out


SETTINGS = settings()


@pytest.mark.network  # knobs are checked against the pinned sdist when no engine is installed
@pytest.mark.skipif(not SETTINGS, reason="examples/vllm/forklift.toml has no [profiles] yet")
@pytest.mark.parametrize("name,sets", SETTINGS, ids=lambda v: v if isinstance(v, str) else ",".join(v))
def test_every_example_setting_prints_without_an_engine(name, sets):
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin"}  # no `vllm` anywhere
    args = [arg for item in sets for arg in ("--set", item)]
    result = forklift("-c", EXAMPLE, "launch", name, *args, "--print", env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == "# argv" and "# env" in lines
    assert "knobs checked against the pinned tree plus the series" in result.stderr
