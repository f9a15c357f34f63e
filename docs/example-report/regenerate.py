"""Regenerate the example report from real receipts: vLLM CPU 0.32.0, the tests' tiny model, this box.

    .venv/bin/python docs/example-report/regenerate.py            # boot, bench, render (a few minutes)
    .venv/bin/forklift report docs/example-report/receipts -o docs/example-report/report.md --baseline plain

The first command boots the engine through forklift.launch (the same helpers as the
test fixtures, so the engine venv and tiny model are built once and cached), benches
a plain setting and an n-gram speculative setting with `forklift bench` (greedy
cohort single stream, then a C1/C2/C4 synthetic sweep), asks for a KV pool larger
than the box to record a real failed boot, and renders the report. The second
command only re-renders from the receipts kept in the repository.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from typer.testing import CliRunner

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from forklift.cli.app import app  # noqa: E402
from forklift.launch.boot import boot  # noqa: E402
from forklift.launch.resolve import resolve  # noqa: E402
from forklift.launch.supervise import stop  # noqa: E402
from forklift.engines.vllm import VLLM  # noqa: E402
from forklift.report import render_report  # noqa: E402
from tests.fixtures.engine import ENGINE_ENV, NGRAM, boot_tiny, free_port, shut_down, tiny_profile  # noqa: E402
from tests.fixtures.engine_install import ENGINE_VERSION, ensure_engine_venv, ensure_tiny_model  # noqa: E402

RECEIPTS = HERE / "receipts"
COHORT = HERE.parents[1] / "tests" / "stats" / "data" / "cohort.jsonl"  # shared with the engine tests


def label(path: Path, setting: str) -> None:
    """Name the setting and engine version on a receipt, as a bench or boot launched from a profile would."""
    receipt = json.loads(path.read_text())
    receipt["engine_version"] = ENGINE_VERSION
    if receipt["kind"] == "bench":
        receipt["body"]["setting"] = setting
    path.write_text(json.dumps(receipt, separators=(",", ":")) + "\n")  # compact: kept in the repository


def bench(url: str, setting: str, *args: str) -> None:
    """One `forklift bench` into RECEIPTS (the server was booted here, not by `--profile`, hence `label`)."""
    before = set(RECEIPTS.glob("*.json"))
    result = CliRunner().invoke(app, ["bench", "--url", url, "--runs", "2", "--receipts", str(RECEIPTS), *args])
    if result.exit_code != 0:
        raise SystemExit(f"bench failed: {result.output}\n{result.exception!r}")
    for path in set(RECEIPTS.glob("*.json")) - before:
        label(path, setting)


def main() -> None:
    shutil.rmtree(RECEIPTS, ignore_errors=True)
    RECEIPTS.mkdir(parents=True)
    python, model = ensure_engine_venv(), ensure_tiny_model(ensure_engine_venv())
    work = Path(tempfile.mkdtemp(prefix="forklift-example-"))
    settings = {
        "plain": tiny_profile(python, model, free_port()),
        "ngram": tiny_profile(python, model, free_port(), args={"enforce-eager": True, "speculative-config": NGRAM}),
    }
    for name, profile in settings.items():
        server = boot_tiny(profile, work, name)
        try:
            label(Path(shutil.copy(server.receipt_path, RECEIPTS / server.receipt_path.name)), name)
            bench(
                server.url, name, "--cohort", str(COHORT), "--max-tokens", "64", "--ignore-eos", "--sampling", "greedy"
            )
            bench(
                server.url,
                name,
                "--synthetic",
                "64:64",
                "--prompts",
                "8",
                "--sampling",
                "greedy",
                "--concurrency",
                "1,2,4",
            )
        finally:
            shut_down(server)
    # a KV pool the box cannot hold: a real failed boot, recorded as a boot receipt
    huge = tiny_profile(
        python, model, free_port(), env={**ENGINE_ENV, "VLLM_CPU_KVCACHE_SPACE": "4096"}, health_timeout=240.0
    )
    booted = boot(resolve({"huge-pool": huge}, "huge-pool", {}, {}, VLLM), VLLM, work / "huge.log", RECEIPTS)
    if booted.body.outcome == "ready":  # the box had the memory after all: stop it, the row will say "ready"
        stop(booted.server)
    label(booted.receipt_path, "huge-pool")
    print(f"huge-pool boot: {booted.body.outcome} {booted.body.facts.fatal or ''}")
    _, files = render_report(RECEIPTS, HERE / "report.md", baseline="plain")
    print("\n".join(str(f) for f in files))


if __name__ == "__main__":
    main()
