"""The [ship] gate `shipped_defaults_boot` over boot receipts written through the real schemas: the profile
as its users run it must have booted ready; never booted is no evidence, a failed boot holds."""

from forklift.launch.schema import BootBody, BootFacts
from forklift.receipts import new_receipt
from forklift.report import load_campaign
from forklift.report.ship import PLAN_KIND, decide
from tests.stats.synthetic import written

SHIPPED = "tiny spec=off"
OOM = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"


def boot(folder, build, setting, outcome="ready", fatal=None):
    body = BootBody(outcome=outcome, facts=BootFacts(fatal=fatal)).model_dump(mode="json")
    written(new_receipt("boot", build=build, setting=setting, body=body), folder)


def judged(tmp_path, boots, shipped=None):
    folder = tmp_path / "receipts"
    for build, setting, outcome, fatal in boots:
        boot(folder, build, setting, outcome, fatal)
    plan = {"baseline": "A", "ship": {"gates": [{"metric": "shipped_defaults_boot"}]}, "shipped_defaults": shipped}
    written(new_receipt(PLAN_KIND, body=plan), folder)
    (decision,) = decide(campaign := load_campaign(folder), campaign.ship)
    (result,) = decision.results
    return decision.decision, result


def test_the_shipped_setting_booted_ready_passes(tmp_path):
    boots = [("A", SHIPPED, "ready", None), ("B", SHIPPED, "ready", None), ("B", "tiny spec=ngram", "ready", None)]
    decision, result = judged(tmp_path, boots, {"tiny": SHIPPED})
    assert decision == "SHIP" and (result.where, result.evidence) == (SHIPPED, "1 of 1 boots ready")


def test_a_candidate_whose_shipped_setting_does_not_boot_holds_with_the_engines_words(tmp_path):
    boots = [("A", SHIPPED, "ready", None), ("B", "tiny spec=off max-num-seqs=4", "ready", None)]
    boots.append(("B", SHIPPED, "died", OOM))
    decision, result = judged(tmp_path, boots, {"tiny": SHIPPED})
    assert decision == "HOLD" and result.evidence == f"1 of 1 boots failed: {OOM}"


def test_never_booted_or_not_asked_for_is_undecided_never_a_pass(tmp_path):
    only_overridden = [("A", "tiny spec=ngram", "ready", None), ("B", "tiny spec=ngram", "ready", None)]
    decision, result = judged(tmp_path, only_overridden, {"tiny": SHIPPED})
    assert decision == "UNDECIDED" and result.evidence == "profile tiny as shipped was never booted"
    decision, result = judged(tmp_path / "2", [("A", SHIPPED, "ready", None), ("B", SHIPPED, "ready", None)], None)
    assert decision == "UNDECIDED" and result.evidence == "the campaign did not set shipped_defaults = true"
