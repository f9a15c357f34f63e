"""Regenerate the example report with a real `forklift campaign` run: vLLM CPU 0.32.0, the tests' tiny model, this box.

    .venv/bin/python docs/example-report/regenerate.py     # boots, benches, renders (about 15 minutes)
    .venv/bin/forklift report docs/example-report/receipts -o docs/example-report/report.md --baseline plain

The first command writes this box's paths (the tests' engine venv and tiny model, built once
and cached) into forklift.toml and campaign.toml here, clears the receipts and runs
`forklift campaign campaign.toml`: one build, the settings plain, ngram (n-gram speculation)
and huge-pool (a KV pool larger than the box), each booted twice as an A/A control, and
benched with a greedy cohort (single stream) and a C1/C2/C4 synthetic sweep; plus a memory
ladder over VLLM_CPU_KVCACHE_SPACE on plain (1, 2 and 4096 GiB). Every label in the
receipts is the campaign's own. The receipts are then re-serialized compactly (the same JSON,
less whitespace) because they are kept in the repository. The second command only re-renders.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures.engine import ENGINE_ENV, NGRAM, SERVED_NAME, distribution_toml  # noqa: E402
from tests.fixtures.engine_install import ensure_engine_venv, ensure_series_applied, ensure_tiny_model  # noqa: E402

PROFILES = """\
[profiles.plain]
python = {python}
model = {model}
served_name = "{served}"
port = 8765
health_timeout = 300
args = {{ enforce-eager = true }}
env = {{ {env} }}

[profiles.ngram]
extends = "plain"
args = {{ enforce-eager = true, speculative-config = {ngram} }}

[profiles.huge-pool]
extends = "plain"
health_timeout = 240
env = {{ VLLM_CPU_KVCACHE_SPACE = "4096" }}
"""

CAMPAIGN = """\
# Written by regenerate.py with this box's paths; `forklift campaign campaign.toml` ran it.
config = "forklift.toml"
receipts = "receipts"
logs = "logs"
report = "report.md"
baseline = "plain"            # compare each setting against plain, on the one build
order = "AB"
aa = true                     # each setting booted twice: the A/A control

[builds."0.32.0+example"]
python = {python}             # vllm-cpu 0.32.0 with examples/vllm's series applied (verified)

[[settings]]
profile = "plain"
[[settings]]
profile = "ngram"
[[settings]]
profile = "huge-pool"

[[suites]]
kind = "bench"
name = "cohort"
cohort = "../../tests/stats/data/cohort.jsonl"
max_tokens = 64
ignore_eos = true
sampling = "greedy"
runs = 2
warmup = 1

[[suites]]
kind = "bench"
name = "sweep"
synthetic = "64:64"
prompts = 8
sampling = "greedy"
concurrency = [1, 2, 4]
runs = 2
warmup = 1

[[suites]]
kind = "ladder"
settings = ["plain"]          # the memory ladder on one setting: a boot and a burst per KV space (GiB)
axis = "VLLM_CPU_KVCACHE_SPACE=1,2,4096"
requests = 8
concurrency = 4
input_tokens = 64
output_tokens = 32
"""


def toml_table(values: dict) -> str:
    return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in values.items()) + " }"


def main() -> None:
    python = ensure_engine_venv()
    ensure_series_applied(python)
    model = ensure_tiny_model(python)
    env = ", ".join(f"{k} = {json.dumps(v)}" for k, v in ENGINE_ENV.items())
    profiles = PROFILES.format(
        python=json.dumps(str(python)),
        model=json.dumps(str(model)),
        served=SERVED_NAME,
        env=env,
        ngram=toml_table(NGRAM),
    )
    (HERE / "forklift.toml").write_text(distribution_toml(profiles).replace(str(ROOT), "../.."))
    (HERE / "campaign.toml").write_text(CAMPAIGN.format(python=json.dumps(str(python))))
    for stale in ("receipts", "receipts.interrupted", "logs"):
        shutil.rmtree(HERE / stale, ignore_errors=True)
    result = subprocess.run([sys.executable, "-m", "forklift", "campaign", "campaign.toml"], cwd=HERE, check=False)
    # huge-pool is meant to fail to boot, so the campaign exits 1 naming its cells; anything else is a failure
    if result.returncode not in (0, 1):
        raise SystemExit(f"forklift campaign exited {result.returncode}")
    for path in (HERE / "receipts").rglob("*.json"):
        path.write_text(json.dumps(json.loads(path.read_text()), separators=(",", ":")) + "\n")
    shutil.rmtree(HERE / "logs", ignore_errors=True)


if __name__ == "__main__":
    main()
