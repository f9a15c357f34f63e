"""`forklift ladder` and `forklift campaign` refuse bad input with one line and exit 2, before anything boots."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["ladder", "tiny", "--axis", "max-model-len=1024"],
            "error: --axis 'max-model-len=1024': a ladder needs at least two values",
        ),
        (
            ["ladder", "tiny", "--axis", "max-model-len=1,2", "--requests", "0"],
            "error: --requests, --concurrency, --input, --output and --timeout must all be positive",
        ),
        (["campaign", "no-such-campaign.toml"], "error: no-such-campaign.toml: no such campaign file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, line):
    result = subprocess.run(
        [sys.executable, "-m", "forklift", *args], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert result.stderr.strip() == line
