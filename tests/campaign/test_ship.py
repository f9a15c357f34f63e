"""The [ship] table and the builds' folders: the gate rule, and every bad input as one line naming the culprit."""

import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from forklift.campaign import load_campaign_file
from forklift.campaign.builds import Build, engine_environment, interpreter
from forklift.errors import ConfigError
from forklift.receipts.packed import read_receipt_json
from forklift.report.ship import judge_interval

HEAD = """
[builds.A]
python = "{python}"
[builds.B]
python = "{python}"
site = "{site}"
[[settings]]
profile = "tiny"
[[suites]]
kind = "bench"
synthetic = "16:16"
"""


def write(tmp_path: Path, extra: str = "", site: str = "builds/B", python: str = sys.executable) -> Path:
    path = tmp_path / "campaign.toml"
    path.write_text(HEAD.format(python=python, site=site) + textwrap.dedent(extra))
    return path


@pytest.mark.parametrize(
    ("interval", "outcome"),
    [
        ((-0.003, -0.008, 0.002, 0.01), "pass"),  # the worse end (-0.8 %) is within -2 %
        ((-0.03, -0.034, -0.026, 0.01), "hold"),  # wholly beyond -2 %
        ((-0.02, -0.03, -0.01, 0.01), "hold"),  # reaches past -2 % and the design sees 1 %
        ((-0.02, -0.05, 0.01, 0.04), "undecided"),  # reaches past, and the MDE (4 %) exceeds the allowance
        ((-0.001, -0.002, 0.0, None), "pass"),
    ],
)
def test_gate_rule_on_a_higher_is_better_metric(interval, outcome):
    change, low, high, mde = interval
    assert judge_interval(change, low, high, mde, True, True, 0.02) == outcome


def test_gate_rule_on_a_lower_is_better_metric_and_unclaimable_is_never_a_pass():
    assert judge_interval(0.05, 0.03, 0.07, 0.01, True, False, 0.10) == "pass"  # TTFT +7 % at worst, 10 % allowed
    assert judge_interval(0.20, 0.15, 0.25, 0.01, True, False, 0.10) == "hold"
    assert judge_interval(0.0, -0.001, 0.001, 0.001, False, False, 0.10) == "undecided"


def test_a_gate_naming_an_unknown_metric_is_one_line(tmp_path):
    path = write(tmp_path, '[ship]\ngates = [{ metric = "decode", worse = "2%" }]\n')
    (tmp_path / "builds" / "B").mkdir(parents=True)
    with pytest.raises(ConfigError) as caught:
        load_campaign_file(path)
    message = str(caught.value)
    assert "\n" not in message and "ship.gates.0.metric" in message and "unknown metric 'decode'" in message
    assert "decode_tps" in message  # the known ones are named


def test_an_slo_capacity_gate_with_an_allowance_or_cells_is_one_line(tmp_path):
    for bad in ('worse = "5%"', 'cells = ["c1"]'):
        with pytest.raises(ConfigError) as caught:
            load_campaign_file(write(tmp_path, f'[ship]\ngates = [{{ metric = "slo_capacity", {bad} }}]\n'))
        message = str(caught.value)
        assert "\n" not in message and "ship.gates.0" in message and "takes no worse or cells" in message, message


def test_a_ship_baseline_that_is_no_build_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"ship.baseline = 'C': not a build \(builds: A, B\)"):
        load_campaign_file(write(tmp_path, '[ship]\nbaseline = "C"\n'))


def test_gates_parse_percent_text(tmp_path):
    campaign = load_campaign_file(write(tmp_path, '[ship]\ngates = [{ metric = "ttft", worse = "10%" }]\n'))
    assert campaign.ship is not None and campaign.ship.gates[0].worse == 10.0


def test_a_build_whose_interpreter_is_missing_is_one_line(tmp_path):
    campaign = load_campaign_file(write(tmp_path, python="envs/gone/bin/python"))
    with pytest.raises(ConfigError) as caught:
        interpreter("A", "envs/gone/bin/python", campaign)
    assert str(caught.value) == (
        f"{tmp_path / 'campaign.toml'}: builds.A.python = 'envs/gone/bin/python': "
        f"no interpreter at {tmp_path / 'envs/gone/bin/python'}"
    )
    with pytest.raises(ConfigError, match=r"builds.A.python = 'no-such-python3': no such command on PATH"):
        interpreter("A", "no-such-python3", campaign)


def test_a_site_needs_python_and_an_unset_variable_is_named(tmp_path, monkeypatch):
    path = tmp_path / "campaign.toml"
    path.write_text(
        '[builds.A]\ncommand = ["vllm"]\nsite = "x"\n[[settings]]\nprofile = "t"\n[[suites]]\nkind = "bench"\n'
    )
    with pytest.raises(ConfigError, match="site needs python"):
        load_campaign_file(path)
    monkeypatch.delenv("FORKLIFT_BUILDS", raising=False)
    campaign = load_campaign_file(write(tmp_path, site="${FORKLIFT_BUILDS}/B"))
    with pytest.raises(ConfigError, match=r"environment variable FORKLIFT_BUILDS is not set"):
        campaign.at("${FORKLIFT_BUILDS}/B")
    monkeypatch.setenv("FORKLIFT_BUILDS", str(tmp_path / "b"))
    assert campaign.at("${FORKLIFT_BUILDS}/B") == tmp_path / "b" / "B"


def test_a_site_build_puts_its_folder_first_on_pythonpath_for_forklifts_own_probes(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    build = Build("B", sys.executable, None, None, None, None, "", site=str(tmp_path))
    assert build.env == {"PYTHONPATH": f"{tmp_path}{os.pathsep}/elsewhere"}
    with engine_environment(build):
        assert os.environ["PYTHONPATH"] == f"{tmp_path}{os.pathsep}/elsewhere"
    assert os.environ["PYTHONPATH"] == "/elsewhere"


def test_budget_and_target_mde_are_checked_when_the_campaign_is_read(tmp_path):
    from forklift.campaign import make_campaign_plan
    from forklift.campaign.precision import parse_budget, repeats_to_add
    from forklift.config.load import parse_config
    from tests.fixtures.engine import distribution_toml

    assert parse_budget("20m", "x") == 1200.0 and parse_budget("1.5h", "x") == 5400.0
    path = write(tmp_path)
    text = path.read_text()
    for budget in ("soon", "0s"):
        path.write_text(f'budget = "{budget}"\n' + text)
        with pytest.raises(ConfigError, match=rf"budget = '{budget}': give a positive time, e.g. '20m'"):
            load_campaign_file(path)
    path.write_text(text + 'target_mde = "none"\n')
    (tmp_path / "forklift.toml").write_text(distribution_toml('[profiles.tiny]\nmodel = "/models/tiny"\n'))
    config = parse_config((tmp_path / "forklift.toml").read_text(), tmp_path / "forklift.toml")
    with pytest.raises(ConfigError, match=r"suites\[0\]: target_mde: 'none': give a percent, e.g. '1%'"):
        make_campaign_plan(load_campaign_file(path), config)
    # Stein's second stage: whole repeats up to what the rule asks, never past the budget
    assert repeats_to_add(needed=6, boots_now=2, per_repeat=2, affordable=10) == 2
    assert repeats_to_add(needed=6, boots_now=2, per_repeat=2, affordable=1) == 1
    assert repeats_to_add(needed=2, boots_now=2, per_repeat=2, affordable=10) == 0


def test_decide_judges_every_candidate_gate_by_gate_and_says_why(tmp_path):
    """Rows as load_campaign makes them; the cell results are stand-ins holding stats' real Estimate."""
    from types import SimpleNamespace

    from forklift.report.campaign import Row, Side
    from forklift.report.ship import ShipSpec, decide, decision_lines, decision_table, overall
    from forklift.stats.interval import Estimate

    def result(change, low, high, mde):
        estimate = Estimate(change=change, low=low, high=high, paired=True, n_a=2, n_b=2, mde=mde, unit="boot", df=2.0)
        found = SimpleNamespace(estimate=estimate, decision=SimpleNamespace(unlike=None), confounded=False)
        return SimpleNamespace(metric=lambda key: found if key == "decode_tps" else None)

    def row(build, cell, found):
        return Row("box", "w", cell, Side("A", "gpu-8b"), Side(build, "gpu-8b"), result=found)

    rows = [
        row("noop", "c1", result(0.001, -0.002, 0.004, 0.005)),
        row("noop", "c16", result(-0.01, -0.03, 0.01, 0.025)),
        row("slowdown", "c1", result(-0.03, -0.034, -0.026, 0.005)),
        row("slowdown", "c16", result(-0.02, -0.06, 0.02, 0.06)),
    ]
    campaign = SimpleNamespace(rows=rows, builds=["A", "noop", "slowdown"], baseline="A", receipts=[])
    spec = ShipSpec.model_validate(
        {
            "gates": [
                {"metric": "decode_tps", "cells": ["c1"], "worse": "2%"},
                {"metric": "decode_tps", "cells": ["c16"], "worse": "5%"},
            ]
        }
    )
    decisions = decide(campaign, spec)
    assert [(d.build, d.decision) for d in decisions] == [("noop", "SHIP"), ("slowdown", "HOLD")]
    assert overall(decisions) == "HOLD"
    held = decisions[1].holding
    assert [(r.where, r.gate.title) for r in held] == [("gpu-8b / c1", "decode tok/s c1 no worse than 2%")]
    assert "Δ -3.0%, CI -3.4%..-2.6%, allowed 2% worse, MDE ±0.5%, 2/2 boots" in held[0].evidence
    lines = decision_lines(decisions, "A")
    assert lines[-3:] == [
        "noop vs A: SHIP",
        "slowdown vs A: HOLD (held by decode tok/s c1 no worse than 2% at gpu-8b / c1)",
        "decision: HOLD",
    ]
    assert lines[2].startswith("  HOLD      slowdown: decode tok/s c1 no worse than 2% at gpu-8b / c1: Δ -3.0%, CI")
    table = decision_table(decisions, "A")
    assert table.startswith("**HOLD** — noop: **SHIP**, slowdown: **HOLD** (each against A)")
    # a gate with nothing to read is undecided, never a silent pass
    empty = decide(campaign, ShipSpec.model_validate({"gates": [{"metric": "tpot", "worse": "2%"}]}))
    assert {d.decision for d in empty} == {"UNDECIDED"}


def test_a_budget_shorter_than_one_boot_stops_the_campaign_in_one_line(tmp_path, vllm_032_tree):
    """A command build whose engine dies after half a second: a real boot that dies, timed, with no engine
    installed. The sleep makes the boot longer than the budget whatever the box (a bare exit can beat 0.1 s)."""
    import subprocess

    from tests.fixtures.engine import distribution_toml

    profile = '[profiles.tiny]\nmodel = "/models/tiny"\nport = 59999\nhealth_timeout = 30\n'
    (tmp_path / "forklift.toml").write_text(distribution_toml(profile))
    (tmp_path / "campaign.toml").write_text(
        'budget = "0.1s"\ncontrol = false\n[builds.A]\ncommand = ["sh", "-c", "sleep 0.5; exit 3"]\n'
        '[[settings]]\nprofile = "tiny"\n[[suites]]\nkind = "bench"\nsynthetic = "16:16"\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "forklift", "campaign", "campaign.toml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: campaign.toml: budget = '0.1s' is less than one boot (r1-tiny-1-A took ")
    assert line.endswith(" s): give the campaign at least that")


def test_margins_name_a_known_metric_and_a_percent_in_one_line(tmp_path):
    campaign = load_campaign_file(
        write(tmp_path, '[[margins]]\nmetric = "decode_tps"\ncells = ["c16"]\nwithin = "3%"\n')
    )
    assert [(m.metric, m.cells, m.within) for m in campaign.margins] == [("decode_tps", ["c16"], 3.0)]
    for bad, said in (
        ('metric = "decode"\nwithin = "3%"', "margins.0.metric: Value error, unknown metric 'decode'"),
        ('metric = "ttft"\nwithin = "100%"', "margins.0.within"),
        ('metric = "ttft"\nwithin = "3%"\ncells = []', "margins.0.cells"),
    ):
        with pytest.raises(ConfigError) as caught:
            load_campaign_file(write(tmp_path, f"[[margins]]\n{bad}\n"))
        assert "\n" not in str(caught.value) and said in str(caught.value), str(caught.value)


def test_a_cells_own_margin_wins_over_the_one_for_every_cell():
    from forklift.stats import MarginRule, rule_margins

    rules = [
        MarginRule(metric="decode_tps", within=3, cells=["c16"]),
        MarginRule(metric="decode_tps", within=2),
        MarginRule(metric="ttft", within="10%"),
    ]
    margins = rule_margins(rules)
    assert margins.of("c16") == {"decode_tps": 0.03, "ttft": 0.10}
    assert margins.of("c1") == {"decode_tps": 0.02, "ttft": 0.10}


def test_the_report_judges_each_cell_against_the_margins_its_plan_receipt_states(tmp_path):
    """The committed H200 ship campaign's receipts (its plan states a 2% decode margin at c16), the plan
    receipt rewritten with no margins and then with 4% at c16."""
    import json
    import shutil

    from forklift.report.campaign import load_campaign

    shipped = Path(__file__).resolve().parents[2] / "docs" / "gpu-report" / "ship" / "receipts"
    folder = tmp_path / "receipts"
    shutil.copytree(shipped, folder)
    (packed,) = folder.glob("*-campaign-plan-*.json.gz")
    receipt, plan = read_receipt_json(packed), packed.with_name(packed.name.removesuffix(".gz"))
    packed.unlink()  # rewritten below as the plain receipt it was packed from
    assert receipt["body"]["margins"] == [{"metric": "decode_tps", "within": 2.0, "cells": ["c16"]}]

    def verdicts(margins):
        plan.write_text(json.dumps({**receipt, "body": {**receipt["body"], "margins": margins}}))
        return {(r.new.build, r.cell): r.result.metric("decode_tps").decision for r in load_campaign(folder).rows}

    stated, default = verdicts(receipt["body"]["margins"]), verdicts([])
    wide = verdicts([{"metric": "decode_tps", "within": 4.0, "cells": ["c16"]}])
    assert wide[("noop", "c1")] == default[("noop", "c1")] and wide[("noop", "c1")].margin == 0.01
    assert stated[("noop", "c16")].margin == 0.02 and default[("noop", "c16")].margin == 0.01
    # noop at c16: Δ +0.2%, CI -0.5..+0.9% (MDE 1.0%) lies inside ±1% as well as ±2%
    assert {stated[("noop", "c16")].kind, default[("noop", "c16")].kind} == {"no practical change"}
    # slowdown at c16: Δ -2.6%, CI -3.2..-1.9% is slower against ±1% and ±2%, inside a ±4% margin
    assert {stated[("slowdown", "c16")].kind, default[("slowdown", "c16")].kind} == {"slower"}
    assert wide[("slowdown", "c16")].kind == "no practical change" and "margin ±4.0%" in wide[("slowdown", "c16")].words


def test_add_boots_without_a_budget_is_one_line(tmp_path):
    path = write(tmp_path, '[ship]\nadd_boots = true\ngates = [{ metric = "ttft", worse = "25%" }]\n')
    (tmp_path / "builds" / "B").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"campaign.toml: ship.add_boots: give the campaign a budget"):
        load_campaign_file(path)


@pytest.mark.parametrize(("add_boots", "added", "c1_mde"), [(False, 0, "1%"), (True, 6, "1%"), (False, 0, "0.05%")])
def test_the_h200_campaign_adds_a_repeat_for_its_undecided_ttft_gate_only_when_asked(
    tmp_path, add_boots, added, c1_mde
):
    """The twelve planned boots of the 2026-12-02 18:45 H200 campaign (docs/gpu-report/ship-rerun) as the pilot of
    campaign.toml with the TTFT gate it ran under (25% at C1 and C16): C1's TTFT boot means moved 13% (pilot sd),
    four boots a side reach an MDE of ~30%. Its decode targets ask for no boots; with `ship.add_boots` the TTFT
    gate's pilot sd asks for six boots a side, and the 18-minute budget has room for one repeat (six boots) after
    the 666 s its cells took, as that campaign said. The shipped C1 TTFT gate (50%) asks for none on them.
    `add_boots = false` is a fixed design: nothing is added, not even for a suite's target_mde that asks for more."""
    import shutil

    from forklift.campaign import make_campaign_plan
    from forklift.campaign.run import Runner
    from forklift.config import load_config

    root = Path(__file__).resolve().parents[2]
    shipped = (root / "docs/gpu-report/campaign.toml").read_text()
    config = root / "examples/known-answers/vllm-0.26.0/forklift.toml"
    text = shipped.replace('"../../examples/known-answers/vllm-0.26.0/forklift.toml"', f'"{config}"')
    text = text.replace('"../../examples/known-answers/vllm-0.26.0/', f'"{config.parent}/')
    assert 'budget = "18m"' in text and "add_boots = true" in text  # as shipped; False: the campaign as it ran
    text = text.replace("${FORKLIFT_BUILDS}", str(tmp_path / "builds"))
    (tmp_path / "shipped.toml").write_text(text)
    text = text.replace("add_boots = true", f"add_boots = {str(add_boots).lower()}")
    text = text.replace('target_mde = "1%"', f'target_mde = "{c1_mde}"')  # 0.05%: more boots than the budget has
    shipped_ttft = (
        '{ metric = "ttft", cells = ["c1"], worse = "50%" },\n  { metric = "ttft", cells = ["c16"], worse = "25%" }'
    )
    assert shipped_ttft in text
    text = text.replace(shipped_ttft, '{ metric = "ttft", cells = ["c1", "c16"], worse = "25%" }')
    (tmp_path / "campaign.toml").write_text(text)
    pilot_cells = shutil.ignore_patterns("r3-*")  # the repeat that campaign added after them
    shutil.copytree(root / "docs/gpu-report/ship-rerun/receipts", tmp_path / "ship" / "receipts", ignore=pilot_cells)

    def pilot(name: str) -> tuple[list[Any], list[str]]:
        spec = load_campaign_file(tmp_path / name)
        said: list[str] = []
        config = load_config(spec.at(spec.config))
        runner = Runner(spec, config, {b: None for b in spec.builds}, make_campaign_plan(spec, config), say=said.append)  # type: ignore[misc]
        return runner.added_slots(), said

    shipped_c1 = [line for line in pilot("shipped.toml")[1] if line.startswith("gate 'TTFT c1 no worse than 50%'")]
    assert len(shipped_c1) == 2 and all(line.endswith("no boots to add") for line in shipped_c1), shipped_c1
    slots, said = pilot("campaign.toml")
    assert len(slots) == added and all(slot.repeat == 3 for slot in slots)
    if not add_boots:  # a fixed design: its suites' target_mde asks for no boots either, and nothing is weighed
        assert said == ["fixed design (ship.add_boots = false): the 12 planned boots, none added"]
        return
    assert said[0] == "budget 18m: 666 s spent over 12 timed boots, room for 1 more repeat(s) of 6 boots"
    decode = [line for line in said if "(decode_tps)" in line]
    assert len(decode) == 8 and all(line.endswith("no boots to add") for line in decode)
    ttft = [line for line in said if line.startswith("gate 'TTFT c1,c16 no worse than 25%'")]
    assert len(ttft) == 4
    if add_boots:  # C1's TTFT boot means moved ~13% (pilot sd): six boots a side reach 25%; C16's less
        by_cell = {cell: next(line for line in ttft if f"noop / {cell}:" in line) for cell in ("c1", "c16")}
        assert "asks for 6 boots a side" in by_cell["c1"] and by_cell["c1"].endswith("adding 1 repeat(s) of 6 boots")
        assert by_cell["c16"].endswith("no boots to add")


def test_perplexity_and_divergence_gates_pass_the_same_numbers_and_hold_a_real_change():
    """The perplexity gate pairs windows (the same windows on both sides); the divergence gate reads the greedy
    output hashes' share with its exact interval. Receipts and Divergence are the real models."""
    from pathlib import Path
    from types import SimpleNamespace

    from forklift.quality.schema import SuiteBody, Window
    from forklift.receipts import new_receipt
    from forklift.report.campaign import Row, Side
    from forklift.report.ship import ShipSpec, decide
    from forklift.stats.divergence import Divergence

    base = [-300.0 - 7 * (i % 5) for i in range(16)]  # 16 windows of 100 tokens: perplexity ~ e^3

    def ppl(build: str, sums: list[float]) -> tuple[Path, Any]:
        items = [Window(id=f"gpl:{i}", start=i, end=i + 1, tokens=100, logprob_sum=v) for i, v in enumerate(sums)]
        options = {"corpus": {"name": "gpl", "sha256": "a" * 64}, "unit": "chars", "size": 1200, "windows": 16}
        body = SuiteBody(
            suite="ppl", url="u", model="m", options=options, passed=True, items=[w.model_dump() for w in items]
        )
        return Path(f"{build}.json"), new_receipt("quality", build=build, body=body.model_dump())

    def row(build: str, diverged: int, compared: int = 16) -> Row:
        drift = Divergence(
            assessed=True, reason="greedy", compared=compared, diverged=[f"p{i}" for i in range(diverged)]
        )
        return Row("box", "w", "c1", Side("A", "real"), Side(build, "real"), result=SimpleNamespace(divergence=drift))

    rng = np.random.default_rng(0)
    receipts = [
        ppl("A", base),
        ppl("A", base),  # a second boot of A: the same windows, pooled
        ppl("noop", base),
        ppl("damaged", [v * 1.01 for v in base]),  # 1 % more nats a token on every window: perplexity +3.2 %
        ppl("shaky", [v + rng.normal(0, 30) for v in base]),  # noise the size of a window's spread
    ]
    rows = [row("noop", 0), row("damaged", 13), row("shaky", 4)]
    campaign = SimpleNamespace(rows=rows, builds=["A", "noop", "damaged", "shaky"], baseline="A", receipts=receipts)
    spec = ShipSpec.model_validate(
        {"gates": [{"metric": "perplexity", "worse": "1%"}, {"metric": "divergence", "worse": "25%"}]}
    )
    decisions = {d.build: d for d in decide(campaign, spec)}
    assert {b: d.decision for b, d in decisions.items()} == {"noop": "SHIP", "damaged": "HOLD", "shaky": "UNDECIDED"}
    noop_ppl, noop_div = decisions["noop"].results
    assert noop_ppl.where == "default / ppl gpl" and noop_ppl.evidence.endswith("identical on all 16 windows")
    assert noop_div.outcome == "pass" and noop_div.evidence.startswith("0/16 prompts diverged (0%, 95% CI 0%..21%)")
    held_ppl, held_div = decisions["damaged"].results
    assert (
        held_ppl.outcome == "hold"
        and "Δ +3.2%, CI +2.9%..+3.4%" in held_ppl.evidence
        and "16 windows paired" in held_ppl.evidence
    )
    assert held_div.outcome == "hold" and held_div.gate.title == "greedy divergence at most 25% of prompts"
    shaky_ppl, shaky_div = decisions["shaky"].results
    # the windows' noise makes the MDE larger than the 1 % allowed: the design cannot tell, so it says so
    assert shaky_ppl.outcome == "undecided" and float(shaky_ppl.evidence.split("MDE ±")[1].split("%")[0]) > 1.0
    assert shaky_div.outcome == "undecided"  # 4/16: its interval straddles 25 %


def test_a_tok_step_gate_never_holds_on_texts_that_diverged():
    """HyperQwen's retraction: greedy, 8 prompts, the texts diverged; a tok/step interval wholly below the allowance
    measures other trajectories, so the gate says so (UNDECIDED), never HOLD."""
    from types import SimpleNamespace

    from forklift.report.campaign import Row, Side
    from forklift.report.ship import ShipSpec, decide
    from forklift.stats.divergence import Divergence
    from forklift.stats.interval import Estimate

    estimate = Estimate(change=-0.11, low=-0.15, high=-0.07, paired=True, n_a=8, n_b=8, mde=0.03, unit="prompt", df=7.0)
    drift = Divergence(assessed=True, reason="greedy", compared=8, diverged=["p1", "p4", "p6"])

    def campaign(confounded: bool) -> SimpleNamespace:
        found = SimpleNamespace(estimate=estimate, decision=SimpleNamespace(unlike=None), confounded=confounded)
        result = SimpleNamespace(metric=lambda key: found if key == "tok_step" else None, divergence=drift)
        row = Row("box", "w", "c1", Side("A", "ngram"), Side("B", "ngram"), result=result)
        return SimpleNamespace(rows=[row], builds=["A", "B"], baseline="A", receipts=[])

    spec = ShipSpec.model_validate({"gates": [{"metric": "tok_step", "worse": "5%"}]})
    (retracted,) = decide(campaign(confounded=True), spec)
    assert retracted.decision == "UNDECIDED"
    assert retracted.results[0].evidence.startswith(
        "texts diverged on 3/8 greedy prompts: a tok/step delta there is no regression; Δ -11.0%"
    )
    (same_text,) = decide(campaign(confounded=False), spec)  # the same interval over the same texts: a regression
    assert same_text.decision == "HOLD"
