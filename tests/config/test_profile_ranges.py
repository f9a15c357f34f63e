"""A profile's counts from someone else's forklift.toml stay in range: one line naming the key."""

from __future__ import annotations

import pytest

from forklift.config.load import parse_config
from forklift.errors import ConfigError
from tests.fixtures.engine import distribution_toml


@pytest.mark.parametrize(
    ("line", "culprit"),
    [
        ("gpus = [-1]", "profiles.p.gpus.0: Input should be greater than or equal to 0"),
        ("gpus = [100000000]", "profiles.p.gpus.0: Input should be less than or equal to 1024"),
        (f"gpus = {list(range(1025))}", "profiles.p.gpus: List should have at most 1024 items"),
        (
            'ray = { head = "h", workers = ["w"], gpus_per_node = 100000000 }',
            "profiles.p.ray.gpus_per_node: Input should be less than or equal to 1024",
        ),
    ],
)
def test_a_count_out_of_range_is_one_line(tmp_path, line, culprit):
    text = distribution_toml(f'[profiles.p]\nmodel = "m"\n{line}\n')
    with pytest.raises(ConfigError) as caught:
        parse_config(text, tmp_path / "forklift.toml")
    assert culprit in str(caught.value) and "\n" not in str(caught.value), str(caught.value)
