"""campaign.toml and the plan: order, A/A marks, settings from axes, one-line errors naming the key."""

import textwrap
from pathlib import Path

import pytest

from forklift.bench.slo import Slo
from forklift.campaign import load_campaign_file, make_campaign_plan
from forklift.campaign.plan import build_order
from forklift.campaign.suites import ServedSetting, bench_plan
from forklift.config.load import parse_config
from forklift.errors import ConfigError
from forklift.receipts.envelope import Labels
from tests.fixtures.engine import distribution_toml

PROFILES = """
[profiles.tiny]
model = "/models/tiny"
args = { enforce-eager = true }
defaults = { spec = "off" }
[profiles.tiny.axes.spec.off]
[profiles.tiny.axes.spec.ngram.args]
speculative-config = { method = "ngram", num_speculative_tokens = 3 }
"""

CAMPAIGN = """
order = "ABBA"
aa = true
[builds.old]
python = "/venvs/old/bin/python"
pristine = true
[builds.new]
python = "/venvs/new/bin/python"
[[settings]]
profile = "tiny"
axes = { spec = ["off", "ngram"] }
[[settings]]
profile = "tiny"
set = ["args.max-num-seqs=4"]
[[suites]]
kind = "bench"
synthetic = "16:16"
concurrency = [1, 2]
[[suites]]
kind = "ladder"
axis = "VLLM_CPU_KVCACHE_SPACE=1,2"
"""


def files(tmp_path: Path, campaign: str = CAMPAIGN) -> tuple:
    (tmp_path / "forklift.toml").write_text(distribution_toml(PROFILES))
    path = tmp_path / "campaign.toml"
    path.write_text(textwrap.dedent(campaign))
    return load_campaign_file(path), parse_config((tmp_path / "forklift.toml").read_text(), tmp_path / "forklift.toml")


def test_abba_marks_the_first_builds_two_copies():
    assert build_order(["A", "B"], "ABBA", aa=True) == [("A", 1), ("B", None), ("B", None), ("A", 2)]
    assert build_order(["A", "B"], "ABBA", aa=False) == [("A", None), ("B", None), ("B", None), ("A", None)]


def test_ab_with_aa_closes_on_a_second_copy_of_the_first_build():
    assert build_order(["A", "B"], "AB", aa=True) == [("A", 1), ("B", None), ("A", 2)]
    assert build_order(["A"], "AB", aa=True) == [("A", 1), ("A", 2)]


def test_plan_interleaves_every_setting_and_runs_ladders_once_per_build_and_setting(tmp_path):
    campaign, config = files(tmp_path)
    plan = make_campaign_plan(campaign, config)
    names = ["tiny spec=off", "tiny spec=ngram", "tiny spec=off max-num-seqs=4"]
    assert [s.setting.name for s in plan.slots] == [n for n in names for _ in range(4)]
    assert [(s.build, s.aa) for s in plan.slots[:4]] == [("old", 1), ("new", None), ("new", None), ("old", 2)]
    assert len(set(plan.keys)) == len(plan.keys) == 12 + 6  # 3 settings x ABBA, and 3 settings x 2 builds of ladder
    assert [s.name for s, _ in plan.served] == ["bench"]
    assert plan.ladders[0].key == "ladder1-tiny_spec=off-old"


def test_a_bench_suites_slo_reaches_its_bench_plan(tmp_path):
    campaign, config = files(
        tmp_path, CAMPAIGN.replace("concurrency = [1, 2]", 'concurrency = [1, 2]\nslo = "ttft=500,tpot=50"')
    )
    ((_, prepared),) = make_campaign_plan(campaign, config).served
    endpoint = ServedSetting(
        url="http://127.0.0.1:1", model="tiny", folder=tmp_path, setting="s", labels=Labels(), boot={}
    )
    plan, mode = bench_plan(endpoint, prepared.ready)
    assert mode == "sweep" and plan.slo == Slo(ttft=500, tpot=50)


@pytest.mark.parametrize(
    ("change", "culprit"),
    [
        (('order = "ABBA"', 'order = "BA"'), "order: Input should be 'ABBA' or 'AB'"),
        (("pristine = true", 'pristine = true\ncommand = ["x"]'), "builds.old: Value error, give exactly one of"),
        (("concurrency = [1, 2]", "concurency = [1, 2]"), "suites[0].concurency: unknown key"),
        (
            ('kind = "ladder"', 'kind = "stress"'),
            "suites[1].kind: suite kind 'stress': unknown (known: bench, cold-pair",
        ),
        (
            ('axes = { spec = ["off", "ngram"] }', 'axes = { spec = ["off", "eagle"] }'),
            "settings[0]: profile tiny: axis spec: unknown value 'eagle'",
        ),
        (('profile = "tiny"\nset', 'profile = "huge"\nset'), "settings[1]: unknown profile 'huge'"),
        (("concurrency = [1, 2]", 'concurrency = [1, 2]\nslo = "ttft=fast"'), "suites[0]: slo = 'ttft=fast': "),
    ],
)
def test_bad_campaign_is_one_line_naming_file_and_key(tmp_path, change, culprit):
    with pytest.raises(ConfigError) as caught:
        campaign, config = files(tmp_path, CAMPAIGN.replace(*change))
        make_campaign_plan(campaign, config)
    message = str(caught.value)
    assert "campaign.toml" in message and culprit in message, message
    assert "\n" not in message


def test_a_campaign_needs_builds_settings_and_suites(tmp_path):
    with pytest.raises(ConfigError, match=r"campaign.toml: suites: missing \(required\)"):
        files(tmp_path, CAMPAIGN.split("[[suites]]")[0])
    with pytest.raises(ConfigError, match=r"campaign.toml: suites: name at least one suite"):
        files(tmp_path, "suites = []\n" + CAMPAIGN.split("[[suites]]")[0])
    with pytest.raises(ConfigError, match=r"campaign.toml: builds: missing"):
        files(tmp_path, "[[settings]]\nprofile = 'tiny'\n")


def test_a_suite_can_be_kept_to_some_settings_and_an_unknown_one_is_named(tmp_path):
    only = CAMPAIGN.replace('axis = "VLLM', 'settings = ["tiny spec=ngram"]\naxis = "VLLM')
    plan = make_campaign_plan(*files(tmp_path, only))
    assert [(j.setting.name, j.build) for j in plan.ladders] == [("tiny spec=ngram", "old"), ("tiny spec=ngram", "new")]
    with pytest.raises(ConfigError, match=r"suites\[1\]\.settings: no setting 'tiny spec=eagle'"):
        make_campaign_plan(*files(tmp_path, only.replace("tiny spec=ngram", "tiny spec=eagle")))


def test_quality_and_canary_suites_plug_in_with_their_own_options_checked(tmp_path):
    gsm8k = CAMPAIGN + '[[suites]]\nkind = "gsm8k"\ndata = "gsm8k.jsonl"\nn = 3\n'
    plan = make_campaign_plan(*files(tmp_path, gsm8k))
    chosen, options = plan.served[1]
    assert chosen.name == "gsm8k" and options.ready.n == 3 and options.ready.data == tmp_path / "gsm8k.jsonl"
    with pytest.raises(ConfigError, match=r"suites\[2\]\.n: Input should be a valid integer"):
        make_campaign_plan(*files(tmp_path, gsm8k.replace("n = 3", 'n = "three"')))
    with pytest.raises(ConfigError, match=r"suites\[2\]: --corpus 'wiki': not in \[quality.corpora\]"):
        make_campaign_plan(*files(tmp_path, CAMPAIGN + '[[suites]]\nkind = "ppl"\ncorpus = "wiki"\n'))


def test_warmup_boots_are_of_the_first_build_per_setting_and_apart_from_the_measured_slots(tmp_path):
    campaign, config = files(tmp_path, CAMPAIGN.replace('order = "ABBA"', 'order = "ABBA"\nwarmup_boots = 1'))
    plan = make_campaign_plan(campaign, config)
    assert [(w.key, w.build, w.aa) for w in plan.warmups] == [
        ("w1-tiny_spec=off-old", "old", None),
        ("w1-tiny_spec=ngram-old", "old", None),
        ("w1-tiny_spec=off_max-num-seqs=4-old", "old", None),
    ]
    assert not {w.key for w in plan.warmups} & set(plan.keys)  # never a cell: nothing of theirs is compared
    (tmp_path / "none").mkdir()
    assert make_campaign_plan(*files(tmp_path / "none")).warmups == []


def test_shipped_defaults_adds_each_profile_as_its_users_run_it_once(tmp_path):
    only_overridden = CAMPAIGN.replace('axes = { spec = ["off", "ngram"] }', 'set = ["args.max-num-seqs=8"]')
    campaign, config = files(tmp_path, only_overridden.replace("aa = true", "aa = true\nshipped_defaults = true"))
    names = list(dict.fromkeys(s.setting.name for s in make_campaign_plan(campaign, config).slots))
    # measured only with --set overrides: the profile as shipped (its default spec=off, nothing set) is added
    assert names == ["tiny spec=off max-num-seqs=8", "tiny spec=off max-num-seqs=4", "tiny spec=off"]
    # already a setting (the axes entry's spec=off is the shipped default): nothing added, nothing twice
    campaign, config = files(tmp_path, CAMPAIGN.replace("aa = true", "aa = true\nshipped_defaults = true"))
    names = list(dict.fromkeys(s.setting.name for s in make_campaign_plan(campaign, config).slots))
    assert names == ["tiny spec=off", "tiny spec=ngram", "tiny spec=off max-num-seqs=4"]
