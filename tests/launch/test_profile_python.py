"""A profile's `python` that is a path is relative to the forklift.toml that names it (not to the working
folder, and never looked up on PATH), and a venv's python is kept as the venv's symlink; a bare name is a
command on PATH."""

from __future__ import annotations

import pytest

from forklift.config.load import parse_config
from forklift.launch.plan import make_launch_plan
from tests.fixtures.engine import distribution_toml


@pytest.mark.parametrize(
    ("given", "expected"),
    [("./python3", "dist/python3"), ("envs/b/bin/python", "dist/envs/b/bin/python"), ("../py", "dist/../py")],
)
def test_a_relative_python_is_relative_to_forklift_toml(tmp_path, monkeypatch, given, expected):
    (tmp_path / "dist").mkdir()
    toml = tmp_path / "dist" / "forklift.toml"
    toml.write_text(distribution_toml(f'[profiles.p]\nmodel = "m"\npython = "{given}"\n'))
    monkeypatch.chdir("/")
    resolved = make_launch_plan(parse_config(toml.read_text(), toml), "p", [], check=False).resolved
    assert resolved.python == str(tmp_path / expected)
    assert resolved.argv[:2] == [str(tmp_path / expected), "-m"]


def test_a_bare_name_is_a_command_on_path(tmp_path):
    toml = tmp_path / "forklift.toml"
    toml.write_text(distribution_toml('[profiles.p]\nmodel = "m"\npython = "python3"\n'))
    assert make_launch_plan(parse_config(toml.read_text(), toml), "p", [], check=False).resolved.python == "python3"
