"""The one way tests run the forklift command line: the real entry point in a child process.

`python -m forklift` in this interpreter, so PYTHONPATH picks the code under test, and exit codes
and stderr are what a user or CI sees. Output is not a terminal, so tables come out uncut.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "vllm"  # the example distribution: vLLM 0.32.0 with its series
FORKLIFT = [sys.executable, "-m", "forklift"]  # for tests that need a Popen of their own


def forklift(
    *args: object, cwd: Path | None = None, env: dict[str, str | None] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run `forklift ARGS...` to completion; `env` adds to (or overrides) this process's environment,
    and an entry of None unsets the variable.

    COLUMNS is dropped, so output is what a CI log gets: no terminal, no width, tables uncut.
    """
    merged: dict[str, str | None] = {**os.environ, "COLUMNS": None, **(env or {})}
    return subprocess.run(
        [*FORKLIFT, *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={key: value for key, value in merged.items() if value is not None},
        timeout=timeout,
    )
