"""The [ship] gate `memory_events`: fail closed on the kernel's own counts, over boot receipts written
through the real schemas (the readings are the shapes tests/launch/test_cgroup.py reads off a real cgroup)."""

import pytest

from forklift.launch.schema import BootBody, CgroupMemory
from forklift.receipts import new_receipt
from forklift.report import load_campaign
from forklift.report.ship import PLAN_KIND, decide
from tests.stats.synthetic import written

GATE = {"metric": "memory_events"}


def boot(folder, build, memory):
    body = BootBody(outcome="ready", memory=memory).model_dump(mode="json")
    written(new_receipt("boot", build=build, setting="tiny", body=body), folder)


def reading(oom_kills=0, high=None, peak_gib=3.0):
    return CgroupMemory(
        cgroup="/sys/fs/cgroup/x",
        version=2,
        max_bytes=8 << 30,
        peak_bytes=int(peak_gib * 2**30),
        high_events=high,
        max_events=0,
        oom_events=0,
        oom_kills=oom_kills,
    )


def judged(tmp_path, a, b):
    folder = tmp_path / "receipts"
    for memory in a:
        boot(folder, "A", memory)
    for memory in b:
        boot(folder, "B", memory)
    written(new_receipt(PLAN_KIND, body={"baseline": "A", "ship": {"gates": [GATE]}}), folder)
    (decision,) = decide(campaign := load_campaign(folder), campaign.ship)
    (result,) = decision.results
    return decision.decision, result


def test_boots_with_no_event_pass_and_state_their_peak(tmp_path):
    decision, result = judged(tmp_path, [reading()], [reading(peak_gib=3.5), reading(peak_gib=4.0)])
    assert decision == "SHIP" and result.evidence == "2 boots, no event; peak 4.00 GiB"


@pytest.mark.parametrize(
    ("memory", "evidence"),
    [
        (reading(oom_kills=1), "oom_kill 1 over 2 boots; peak 3.00 GiB"),
        (reading(high=12), "high 12 over 2 boots; peak 3.00 GiB"),
    ],
)
def test_a_candidate_that_reached_its_limit_holds(tmp_path, memory, evidence):
    decision, result = judged(tmp_path, [reading()], [reading(), memory])
    assert decision == "HOLD" and result.evidence == evidence


def test_a_boot_outside_a_cgroup_is_no_evidence_of_none(tmp_path):
    decision, result = judged(tmp_path, [reading()], [reading(), None])
    assert decision == "UNDECIDED" and result.evidence == "1 of 2 boots had no memory cgroup"
