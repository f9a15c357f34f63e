"""campaign: builds x settings x suites, interleaved, with an A/A control, resumable, labelled receipts."""

from forklift.campaign.plan import CampaignPlan, Slot, make_campaign_plan
from forklift.campaign.schema import CampaignFile, load_campaign_file
from forklift.campaign.suites import SUITES, CampaignSuite, ServedSetting, register

__all__ = [
    "SUITES",
    "CampaignFile",
    "CampaignPlan",
    "CampaignSuite",
    "ServedSetting",
    "Slot",
    "load_campaign_file",
    "make_campaign_plan",
    "register",
]
