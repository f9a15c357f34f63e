"""Re-measure the real receipts tests/stats/test_real_receipts.py holds compare to (run by hand, ~5 min).

Boots the tests' vLLM CPU engine twice (plain, n-gram speculation) and benches the stats cohort:
two benches of the same plain server keeping one run each (the old default), two keeping four runs
each after a warm-up (the default), and the n-gram server with the default. The receipts land in
tests/stats/data/receipts/<name>/; usage: `PYTHONPATH=. .venv/bin/python tests/stats/data/regenerate.py`.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from typer.testing import CliRunner

from forklift.cli.app import app
from tests.fixtures.engine import NGRAM, boot_tiny, free_port, shut_down, tiny_profile
from tests.fixtures.engine_install import ensure_engine_venv, ensure_series_applied, ensure_tiny_model

HERE = Path(__file__).parent
COHORT = HERE / "cohort.jsonl"
OUT = HERE / "receipts"


def bench(url: str, name: str, *runs: str) -> None:
    args = ["bench", "--url", url, "--cohort", str(COHORT), "--max-tokens", "32", "--ignore-eos"]
    args += ["--sampling", "greedy", *runs, "--label", name, "--receipts", str(OUT / name)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output


def main() -> None:
    python = ensure_engine_venv()
    ensure_series_applied(python)
    model = ensure_tiny_model(python)
    shutil.rmtree(OUT, ignore_errors=True)
    scratch = Path(tempfile.mkdtemp(prefix="forklift-regenerate-"))
    plain = boot_tiny(tiny_profile(python, model, free_port()), scratch, "plain")
    try:
        bench(plain.url, "warm-up", "--runs", "2")  # a fresh server speeds up over its first benches
        shutil.rmtree(OUT / "warm-up")
        for name in ("aa1-a", "aa1-b"):
            bench(plain.url, name, "--warmup", "1", "--runs", "1")
        for name in ("plain-a", "plain-b"):
            bench(plain.url, name)
    finally:
        shut_down(plain)
    ngram = boot_tiny(
        tiny_profile(python, model, free_port(), args={"enforce-eager": True, "speculative-config": NGRAM}),
        scratch,
        "ngram",
    )
    try:
        bench(ngram.url, "warm-up", "--runs", "2")
        shutil.rmtree(OUT / "warm-up")
        bench(ngram.url, "ngram")
    finally:
        shut_down(ngram)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
