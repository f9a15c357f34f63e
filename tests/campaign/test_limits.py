"""A campaign.toml from someone else cannot make forklift plan more boots than it can run, or hold more in
memory than a campaign needs: every count is capped by the schema (one line naming the key), and the plan's
product (repeats x settings x builds x boxes, plus ladders and warm-ups) by MAX_BOOTS, before a cell is made."""

from __future__ import annotations

import pytest

from forklift.campaign import make_campaign_plan
from forklift.campaign.schema import MAX_BOOTS
from forklift.errors import ConfigError
from tests.campaign.test_plan import CAMPAIGN, files


@pytest.mark.parametrize(
    ("change", "culprit"),
    [
        (('order = "ABBA"', "repeats = 100000000\norder = 'ABBA'"), "repeats: Input should be less than or equal to"),
        (('order = "ABBA"', "warmup_boots = 10000000\norder = 'ABBA'"), "warmup_boots: Input should be less than"),
        (("concurrency = [1, 2]", "concurrency = [1, 100000000]"), "suites[0].concurrency.1: Input should be less"),
        (("concurrency = [1, 2]", f"concurrency = {list(range(1, 1000))}"), "suites[0].concurrency: List should have"),
        (('synthetic = "16:16"', 'synthetic = "16:16"\nprompts = 1000000000'), "suites[0].prompts: Input should be"),
        (('synthetic = "16:16"', 'synthetic = "16:16"\nruns = 1000000000'), "suites[0].runs: Input should be"),
        (('axis = "VLLM', 'requests = 1000000000\naxis = "VLLM'), "suites[1].requests: Input should be"),
    ],
)
def test_a_count_past_its_cap_is_one_line_naming_the_key(tmp_path, change, culprit):
    with pytest.raises(ConfigError) as caught:
        make_campaign_plan(*files(tmp_path, CAMPAIGN.replace(*change)))
    message = str(caught.value)
    assert "campaign.toml" in message and culprit in message and "\n" not in message, message


@pytest.mark.parametrize(
    ("change", "boots"),
    [
        # 1,000 repeats x 3 settings x 4 boots (ABBA), and the ladder's 3 x 2 builds x 2 values
        (('order = "ABBA"', "repeats = 1000\norder = 'ABBA'"), 12_012),
        # twenty axes of ten choices each: 10^20 settings, counted, never listed
        (
            (
                'axes = { spec = ["off", "ngram"] }',
                "axes = { " + ", ".join(f"a{i} = {list('0123456789')}" for i in range(20)) + " }",
            ),
            4 * (10**20 + 1) + 2 * 2 * (10**20 + 1),
        ),
        (('axis = "VLLM_CPU_KVCACHE_SPACE=1,2"', 'axis = "VLLM_CPU_KVCACHE_SPACE=1:64:1"'), 12 + 3 * 2 * 64),
    ],
)
def test_a_plan_past_max_boots_is_refused_before_a_cell_is_made(tmp_path, change, boots):
    campaign, config = files(tmp_path, CAMPAIGN.replace(*change))
    if boots <= MAX_BOOTS:
        assert len(make_campaign_plan(campaign, config).keys) == 12 + 6  # a ladder job is one cell of many boots
        return
    with pytest.raises(ConfigError) as caught:
        make_campaign_plan(campaign, config)
    assert str(caught.value) == (
        f"{campaign.path}: repeats, settings, builds, boxes and suites plan {boots:,} boots,"
        f" more than {MAX_BOOTS:,} in one campaign"
    )
