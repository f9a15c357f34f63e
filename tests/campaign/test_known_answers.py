"""The ship decision's known answers on the real vLLM CPU build: A vs A + slowdown holds, A vs A + noop does not.

Three builds as a user has them (tests/campaign/known_answers.py): A, the test engine's vLLM; A + noop.patch
(a comment) and A + slowdown.patch (10 ms of sleep per engine step), each a copy of A's package folder patched
with `forklift apply` and named by `site`, run by the one interpreter. One warm-up boot of A, then order ABBA:
A, noop, slowdown, slowdown, noop, A (6 boots: two boots a side of three builds give the pooled boot sd 3
degrees of freedom). The [ship] gates: decode tok/s and E2E. The model is the 2-layer tiny one (its boots are
the cheapest: the whole campaign ~3-4 minutes on a 2-core box).

slowdown must HOLD, on its decode gate wherever both sides have decode timing (a 2-core box loaded past its
cores delivers some answers in one write, which have none; then its E2E gate holds it); never SHIP. noop must
not HOLD: two boots a side on a shared box may leave it UNDECIDED, never a claimed regression that is not there.
When the box is loaded past its cores and slowdown reads UNDECIDED because every gate's MDE exceeds its
allowance, this design cannot see the slowdown there and the HOLD is skipped, naming those MDEs (the other
assertions still hold); on a box with cores to spare a missed slowdown fails.
"""

import json
import os

import pytest

from forklift.client.records import RequestRecord
from forklift.receipts.store import read_receipts
from tests.campaign.known_answers import make_build, run_campaign
from tests.fixtures.engine import distribution_toml, ensure_tiny_model, free_port, tiny_profile_toml

pytestmark = pytest.mark.engine

CAMPAIGN = """
order = "ABBA"
aa = true
warmup_boots = 1
report = "report.md"
[builds.A]
python = "{python}"
[builds.noop]
python = "{python}"
site = "${{FORKLIFT_BUILDS}}/noop"
config = "dist-noop"
[builds.slowdown]
python = "{python}"
site = "${{FORKLIFT_BUILDS}}/slowdown"
config = "dist-slowdown"
[[settings]]
profile = "tiny"
[[suites]]
kind = "bench"
name = "c1"
synthetic = "32:32"
prompts = 4
mode = "sweep"
concurrency = [1]
runs = 2
warmup = 1
[[suites]]
kind = "bench"
name = "c4"
synthetic = "32:32"
prompts = 8
mode = "sweep"
concurrency = [4]
runs = 2
warmup = 1
[ship]
gates = [
  {{ metric = "decode_tps", worse = "10%" }},
  {{ metric = "e2e", worse = "25%" }},
]
"""


# Six boots: ~4 minutes on an idle 2-core box, ~25 under a load of 14-16 (seen).
CAMPAIGN_TIMEOUT_S = 2400


@pytest.mark.timeout(CAMPAIGN_TIMEOUT_S + 600)
def test_slowdown_holds_on_its_decode_gate_and_noop_is_no_regression(engine_python, tmp_path):
    tiny_model = ensure_tiny_model(engine_python)
    site = next((engine_python.parent.parent / "lib").glob("python3*/site-packages"))
    for name in ("noop", "slowdown"):
        make_build(site, tmp_path, name, f"{name}.patch")
    (tmp_path / "forklift.toml").write_text(
        distribution_toml(tiny_profile_toml(engine_python, tiny_model, free_port()))
    )
    (tmp_path / "campaign.toml").write_text(CAMPAIGN.format(python=engine_python))
    returncode, out = run_campaign(tmp_path, CAMPAIGN_TIMEOUT_S)
    assert returncode in (1, 3), out  # HOLD or UNDECIDED: a campaign with slowdown in it never ships
    lines = {line.split(":")[0]: line for line in out.splitlines() if " vs A: " in line}
    assert {"slowdown vs A", "noop vs A"} <= set(lines), out
    assert not lines["slowdown vs A"].startswith("slowdown vs A: SHIP"), out
    assert not lines["noop vs A"].startswith("noop vs A: HOLD"), out  # never a regression that is not there

    receipts = [r for _, r in read_receipts([tmp_path / "receipts"])]
    benches = [r for r in receipts if r.kind == "bench"]
    # the builds ran from their own folders: three overlay hashes, one per build
    assert {r.build for r in benches} == {"A", "noop", "slowdown"}
    assert len({r.overlay_hash for r in benches}) == 3
    # ground truth beside the client: every kept run has the engine's own latencies, and the client, which
    # also times the network and the frontend, never reads a shorter E2E or TTFT than the engine did
    for receipt in benches:
        for cell in receipt.body["cells"]:
            latency = cell["server_latency"]
            assert latency is not None and latency["requests"] == len(
                [x for x in cell["requests"] if x["run"] in cell["kept_runs"]]
            ), json.dumps(latency)
            assert cell["aggregate"]["e2e_ms"]["mean"] >= latency["e2e_mean_ms"] * 0.99
            # a client that stopped its clock before the engine's first token (a role chunk, the response
            # headers) would read below the engine's own TTFT
            assert cell["aggregate"]["ttft_ms"]["mean"] >= latency["ttft_mean_ms"] * 0.99
            # the engine core's share of its TTFT (waiting, then the prefill step) lies inside that TTFT
            assert latency["queue_mean_ms"] + latency["prefill_mean_ms"] <= latency["ttft_mean_ms"] * 1.01
            assert all(f["gpus"] is None and f["steady"] is not None for f in cell["run_facts"])
    report = (tmp_path / "report.md").read_text()
    assert report.index("## Decision") < report.index("## Summary")

    held = lines["slowdown vs A"]
    if not held.startswith("slowdown vs A: HOLD"):
        # UNDECIDED is the right word when the design cannot see the slowdown: on a box loaded past its cores
        # (seen: load 14-21 from other suites) answers arrive in bursts and the client's per-boot decode and E2E
        # swing by multiples, so two boots a side give MDEs of thousands of percent. Skipped only then, naming
        # the MDEs; with cores to spare, a missed slowdown fails. A latency gate over bursts on one side only
        # (forklift.stats.bursts) cannot see it either, whatever its MDE.
        gates = [line.strip() for line in out.splitlines() if line.strip().startswith("UNDECIDED slowdown:")]
        load = os.getloadavg()[0]
        judged = [line for line in gates if "MDE ±" in line and "answers delivered in bursts" not in line]
        blind = gates and all(_mde(line) > _allowed(line) for line in judged)
        if held.startswith("slowdown vs A: UNDECIDED") and blind and load > (os.cpu_count() or 1):
            pytest.skip(
                f"slowdown UNDECIDED on this box loaded past its cores (load {load:.1f}): the design could not "
                f"see it ({'; '.join(gates)})"
            )
        pytest.fail(f"slowdown was not held (load {load:.1f}):\n{out}")
    timed = all(
        any(not RequestRecord.model_validate(rec).delivered_in_burst for rec in c["requests"])
        for r in benches
        for c in r.body["cells"]
    )
    assert ("held by decode tok/s" in held) if timed else ("decode tok/s" in held or "E2E" in held), held
    assert "**HOLD**" in report


def _mde(line: str) -> float:
    return float(line.split("MDE ±", 1)[1].split("%", 1)[0])


def _allowed(line: str) -> float:
    return float(line.split("allowed ", 1)[1].split("%", 1)[0])
