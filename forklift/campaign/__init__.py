"""campaign: builds x settings x suites, interleaved, with an A/A control, resumable, labelled receipts."""

from forklift.campaign.plan import CampaignPlan, Slot, make_plan
from forklift.campaign.schema import CampaignFile, load_campaign_file
from forklift.campaign.suites import SUITES, Endpoint, Suite, register

__all__ = [
    "SUITES",
    "CampaignFile",
    "CampaignPlan",
    "Endpoint",
    "Slot",
    "Suite",
    "load_campaign_file",
    "make_plan",
    "register",
]
