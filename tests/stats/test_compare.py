"""compare_groups over synthetic bench receipts built through the real schema."""

import math

import pytest
from scipy import stats

from forklift.errors import ForkliftError
from forklift.stats import METRICS, Margins, compare_groups, match
from forklift.stats.bursts import unlike_delivery
from forklift.stats.verdict import interval_phrase, judge
from tests.stats.synthetic import as_run, bench_receipt, delivered_in_burst, records, workload


def one_cell(**kwargs):
    """One bench keeping one run (its second): an interval over prompts only."""
    return as_run(bench_receipt({"single": records(**kwargs)}))


def four_runs(boot=None, **kwargs):
    """One bench keeping four runs, on `boot` (unrecorded: a boot of its own)."""
    return as_run(bench_receipt({"single": records(runs=4, **kwargs)}, kept=[0, 1, 2, 3], boot=boot))


def boots(n, first_seed, **kwargs):
    """`n` benches of four runs, each on a boot of its own: the boot is the unit."""
    return [four_runs(boot=f"boot-{first_seed + i}", seed=first_seed + i, **kwargs) for i in range(n)]


def compare(a, b, **kwargs):
    return compare_groups([a], [b], **kwargs).cells[0]


def test_planted_speedup_is_claimed_at_its_size_over_boots_in_the_metrics_own_words():
    cell = compare_groups(boots(3, 1, prompts=16), boots(3, 10, prompts=16, speed=1.2)).cells[0]
    assert cell.paired and cell.pairs == 16 * 4 * 3
    decode, ttft = cell.metric("decode_tps"), cell.metric("ttft")
    assert decode.estimate.unit == "boot" and (decode.estimate.n_a, decode.estimate.n_b) == (3, 3)
    assert decode.claim == "faster" and decode.verdict.startswith("B faster by") and not decode.decision.worse
    assert decode.estimate.low < 0.2 < decode.estimate.high
    assert ttft.claim == "faster" and ttft.verdict.startswith("B faster by")  # lower TTFT is better
    assert ttft.estimate.change < 0
    assert cell.metric("output_tokens").claim == "no practical change"  # the same tokens on every boot


def test_one_boot_a_side_reports_the_effect_but_names_no_winner():
    cell = compare(four_runs(prompts=16, seed=1), four_runs(prompts=16, speed=1.2, seed=2))
    decode = cell.metric("decode_tps")
    assert decode.estimate.unit == "run" and decode.estimate.unclaimable == "boot" and decode.estimate.excludes_zero
    assert decode.claim == "not claimable" and "one boot a side" in decode.verdict
    assert decode.verdict.startswith("not claimable (Δ +")


def test_one_run_a_side_of_one_boot_reports_the_effect_but_names_no_winner():
    a = as_run(bench_receipt({"single": records(prompts=16, seed=1)}, boot="s"))
    b = as_run(bench_receipt({"single": records(prompts=16, speed=1.2, seed=2)}, boot="s"))
    decode = compare(a, b).metric("decode_tps")
    assert decode.estimate.unit == "prompt" and decode.estimate.unclaimable == "run"
    assert decode.claim == "not claimable" and "one run a side" in decode.verdict


def test_runs_of_one_boot_are_the_unit_with_welchs_interval():
    two = dict(prompts=8, runs=2)
    a = as_run(bench_receipt({"single": records(seed=1, **two)}, kept=[0, 1], boot="s"))
    b = as_run(bench_receipt({"single": records(seed=2, speed=1.3, **two)}, kept=[0, 1], boot="s"))
    decode = compare(a, b).metric("decode_tps")
    assert decode.estimate.unit == "run" and decode.estimate.claimable and decode.estimate.mde is not None
    means = []
    for run in (a, b):
        per_run = {}
        for record in run.body.cells[0].requests:
            per_run.setdefault(record.run, []).append(math.log(record.decode_tps))
        means.append([sum(v) / len(v) for v in per_run.values()])
    (a0, a1), (b0, b1) = means
    var_a, var_b = (a0 - a1) ** 2 / 4, (b0 - b1) ** 2 / 4  # sd^2 / n with sd^2 = d^2 / 2, n = 2
    df = (var_a + var_b) ** 2 / (var_a**2 + var_b**2)
    half = stats.t.ppf(0.975, df) * math.sqrt(var_a + var_b)
    centre = (b0 + b1) / 2 - (a0 + a1) / 2
    assert decode.estimate.df == pytest.approx(df)
    assert decode.estimate.low == pytest.approx(math.expm1(centre - half), rel=1e-9)
    assert decode.estimate.high == pytest.approx(math.expm1(centre + half), rel=1e-9)


def test_planted_slowdown_reads_slower_and_worse():
    cell = compare_groups(boots(3, 1, prompts=16), boots(3, 10, prompts=16, speed=0.85)).cells[0]
    tpot = cell.metric("tpot")
    assert tpot.claim == "slower" and tpot.decision.worse and tpot.verdict.startswith("B slower by")
    assert cell.metric("decode_tps").verdict.startswith("B slower by")


def test_a_receipt_against_itself_has_zero_delta_and_no_claim():
    run = four_runs(prompts=8)
    cell = compare(run, run)
    for metric in cell.metrics:
        assert metric.estimate.change == 0, metric.metric
        assert metric.claim in ("no practical change", "undecided", "within noise"), metric.verdict


def test_same_speed_on_other_boots_is_no_claim():
    decode = compare_groups(boots(3, 1, prompts=8), boots(3, 10, prompts=8)).cells[0].metric("decode_tps")
    assert not decode.decision.claimed and decode.estimate.mde > 0


def test_a_margin_turns_a_real_but_small_change_into_no_practical_change():
    # 1 % faster, measured tightly: a claim at a 0.5 % margin, no practical change at 5 %
    a, b = boots(3, 1, prompts=16, noise=0.005), boots(3, 10, prompts=16, noise=0.005, speed=1.01)
    small = compare_groups(a, b, margins=Margins({"decode_tps": 0.005})).cells[0].metric("decode_tps")
    assert small.claim == "faster" and "margin ±0.5%" in small.verdict
    wide = compare_groups(a, b, margins=Margins({"decode_tps": 0.05})).cells[0].metric("decode_tps")
    assert wide.claim == "no practical change" and wide.verdict.startswith("no practical change (Δ +1.0%")


def test_geometric_means_are_consistent_with_the_paired_change():
    cell = compare(one_cell(prompts=8, seed=1), one_cell(prompts=8, speed=1.1, seed=2))
    decode = cell.metric("decode_tps")
    assert decode.b / decode.a - 1 == pytest.approx(decode.estimate.change, rel=1e-9)


def test_different_prompts_fall_back_to_unpaired_and_say_so():
    cell = compare(one_cell(prompts=20, seed=1), one_cell(prompts=20, speed=1.5, seed=2, prefix="q"))
    assert not cell.paired and cell.pairs == 0
    decode = cell.metric("decode_tps")
    assert not decode.estimate.paired and decode.claim == "not claimable"  # one boot a side, no A/A
    assert "one boot a side" in decode.verdict
    assert not cell.divergence.assessed


def test_divergence_is_counted_per_prompt_and_confounds_tok_step():
    a = as_run(bench_receipt({"single": records(prompts=8, seed=1, tok_step=2.5)}))
    b_records = records(prompts=8, seed=2, tok_step=2.5)
    for record in b_records:
        if record.prompt_id in ("p1", "p4", "p6"):
            record.output_sha256 = "0" * 64
    cell = compare(a, as_run(bench_receipt({"single": b_records})))
    assert cell.divergence.diverged == ["p1", "p4", "p6"] and cell.divergence.compared == 8
    assert "3/8 prompts diverged" in cell.divergence.summary
    tok_step = cell.metric("tok_step")
    assert tok_step.confounded and "confounded: 3 prompts diverged" in tok_step.verdict
    assert not cell.metric("decode_tps").confounded


def test_divergence_is_not_assessed_when_sampling_is_not_greedy():
    sampled = workload(sampling={"preset": "default"})
    a = as_run(bench_receipt({"single": records(prompts=4)}, ident=sampled))
    b = as_run(bench_receipt({"single": records(prompts=4, text="other")}, ident=sampled))
    cell = compare(a, b)
    assert not cell.divergence.assessed and "not greedy" in cell.divergence.summary


def test_determinism_within_a_side():
    steady = one_cell(prompts=4)
    flaky_records = records(prompts=4)
    flaky_records[0].output_sha256 = "f" * 64  # run 0, prompt p0 wrote something else than in run 1
    cell = compare(steady, as_run(bench_receipt({"single": flaky_records})))
    assert cell.determinism_a.summary == "deterministic (4 prompts, up to 2 sends each)"
    assert cell.determinism_b.changed == ["p0"]
    single = compare(one_cell(prompts=4, runs=1), one_cell(prompts=4, runs=1))
    assert single.determinism_a.summary.startswith("determinism unknown")


def salted(nonce, **kwargs):
    return as_run(
        bench_receipt({"single": records(prompts=4, **kwargs)}, ident=workload(salted=True, salt_nonce=nonce))
    )


def test_salted_runs_send_new_text_so_only_equal_salts_are_compared():
    # within one salted bench, run 0 and run 1 sent different text: equal hashes prove nothing
    assert compare(salted("n1"), salted("n1")).determinism_a.summary.startswith("determinism unknown")
    # two benches with the same nonce sent the same salted text, run for run
    same = compare_groups([salted("n1"), salted("n1")], [salted("n1", text="other")]).cells[0]
    assert same.determinism_a.prompts == 4 and not same.determinism_a.changed
    assert same.divergence.assessed and len(same.divergence.diverged) == 4
    # another nonce: no request sent the same text to both sides
    other = compare(salted("n1"), salted("n2", text="other"))
    assert not other.divergence.assessed and "salts differ" in other.divergence.summary
    assert other.paired  # timing still pairs by prompt id


def test_requests_delivered_in_one_burst_have_no_decode_timing():
    burst = records(prompts=6, seed=2)
    for record in burst[:3] + burst[6:9]:  # half the prompts: every chunk read at one instant
        record.chunks = [(record.first_token, 1)] * 8
    cell = compare(one_cell(prompts=6, seed=1), as_run(bench_receipt({"single": burst})))
    assert (cell.bursts_a, cell.bursts_b) == (0, 3)
    assert cell.metric("decode_tps").estimate.n_a == 3 and cell.metric("tpot").estimate.n_a == 3
    assert cell.metric("e2e").estimate.n_a == 6  # end-to-end latency is still measured


def test_tok_step_row_appears_only_with_per_request_spec_stats():
    assert compare(one_cell(prompts=4), one_cell(prompts=4)).metric("tok_step") is None
    cell = compare_groups(boots(2, 1, prompts=8, tok_step=1.0), boots(2, 10, prompts=8, tok_step=2.0)).cells[0]
    assert cell.metric("tok_step").claim == "faster" and cell.metric("tok_step").verdict.startswith("B higher by")


def test_failed_requests_drop_out_of_pairs_and_are_counted():
    b_records = records(prompts=6, seed=2)
    b_records[-1].error_kind, b_records[-1].end = "timeout", None
    cell = compare(one_cell(prompts=6, seed=1), as_run(bench_receipt({"single": b_records})))
    assert cell.failed_b == 1 and cell.metric("decode_tps").estimate.n_a == 5


def test_too_few_pairs_say_so_instead_of_a_verdict():
    cell = compare(one_cell(prompts=1), one_cell(prompts=1, speed=2))
    assert cell.metric("decode_tps").claim == "not claimable" and cell.metric("decode_tps").estimate is None
    assert cell.metric("decode_tps").verdict.startswith("too few values")


def test_cells_on_one_side_only_are_listed():
    a = as_run(bench_receipt({"c1": records(prompts=4), "c2": records(prompts=4)}))
    b = as_run(bench_receipt({"c1": records(prompts=4), "c4": records(prompts=4)}))
    result = compare_groups([a], [b])
    assert [c.cell for c in result.cells] == ["c1"] and result.only_a == ["c2"] and result.only_b == ["c4"]


@pytest.mark.parametrize(
    ("field", "change", "shown"),
    [
        ("hash", {"hash": "x" * 64}, f"'{'w' * 64}' in a.json vs '{'x' * 64}' in b.json"),
        ("corpus_hash", {"corpus_hash": "y" * 64}, f"vs '{'y' * 64}' in b.json"),
        ("sampling", {"sampling": {"preset": "seeded", "seed": 1}}, 'vs {"preset": "seeded", "seed": 1} in b.json'),
        ("max_tokens", {"max_tokens": 128}, "64 in a.json vs 128 in b.json"),
        ("salted", {"salted": True}, "False in a.json vs True in b.json"),
    ],
)
def test_guard_refuses_a_differing_workload_field_naming_both_values(field, change, shown):
    a = as_run(bench_receipt({"single": records(prompts=4)}), "a.json")
    b = as_run(bench_receipt({"single": records(prompts=4)}, ident=workload(**change)), "b.json")
    with pytest.raises(ForkliftError) as caught:
        compare_groups([a], [b])
    message = str(caught.value)
    assert message.startswith(f"not comparable: workload.{field} differs: ") and shown in message
    assert "\n" not in message


def test_guard_refuses_other_machines_unless_asked_and_then_keeps_boxes_apart():
    a = as_run(bench_receipt({"single": records(prompts=4)}, machine="box-a"), "a.json")
    b = as_run(bench_receipt({"single": records(prompts=4)}, machine="box-b"), "b.json")
    with pytest.raises(ForkliftError, match=r"fingerprint.machine_id differs: box-a \(box-a\) in a.json vs box-b"):
        match([a], [b])
    with pytest.raises(ForkliftError, match="--across-machines"):
        compare_groups([a], [b])
    result = compare_groups([a], [b], across_machines=True)
    assert result.across_machines and (result.host_a, result.host_b) == ("box-a", "box-b")


def test_matching_pairs_settings_per_box_and_never_pools_boxes():
    a_runs = [
        as_run(bench_receipt({"single": records(prompts=4)}, setting=s, machine=m))
        for s in ("plain", "ngram")
        for m in ("box-a", "box-b")
    ]
    b_runs = [
        as_run(bench_receipt({"single": records(prompts=4)}, setting=s, machine=m))
        for s in ("plain", "ngram")
        for m in ("box-a", "box-b")
    ]
    matching = match(a_runs, b_runs)
    assert len(matching.pairs) == 4
    for side_a, side_b in matching.pairs:
        assert {r.machine_id for r in side_a + side_b} == {side_a[0].machine_id}
        assert side_a[0].setting == side_b[0].setting


def test_single_setting_sides_pair_whatever_their_labels():
    a = as_run(bench_receipt({"single": records(prompts=4)}, setting="plain"))
    b = as_run(bench_receipt({"single": records(prompts=4)}, setting="ngram"))
    matching = match([a], [b])
    assert len(matching.pairs) == 1 and not matching.only_a and not matching.only_b


def test_nothing_in_common_is_refused():
    a = [as_run(bench_receipt({"single": records(prompts=4)}, setting=s)) for s in ("x", "y")]
    b = [as_run(bench_receipt({"single": records(prompts=4)}, setting=s)) for s in ("z", "w")]
    with pytest.raises(ForkliftError, match="nothing to compare: A has x / cohort"):
        match(a, b)


def test_two_receipts_of_one_setting_add_runs():
    runs = [one_cell(prompts=4, seed=s) for s in (1, 2)]
    cell = compare_groups(runs, [one_cell(prompts=4, seed=3), one_cell(prompts=4, seed=4)]).cells[0]
    assert cell.pairs == 8 and cell.requests_a == 8


def test_two_folders_of_two_settings_meet_by_workload():
    # a campaign's cell folders: one setting each, two workloads each (issue 22's refusal)
    a = [
        as_run(bench_receipt({"single": records(prompts=4)}, setting="plain", ident=workload(name=n)))
        for n in ("cohort", "sweep")
    ]
    b = [
        as_run(bench_receipt({"single": records(prompts=4)}, setting="ngram", ident=workload(name=n)))
        for n in ("cohort", "sweep")
    ]
    matching = match(a, b)
    assert [(x[0].body.workload.name, y[0].body.workload.name) for x, y in matching.pairs] == [
        ("cohort", "cohort"),
        ("sweep", "sweep"),
    ]


def test_a_boot_is_told_by_boot_id_then_by_the_launch_log_else_by_the_receipt():
    from forklift.stats import boot_identity

    launched = bench_receipt({"single": records(prompts=4)})
    launched.body["boot"] = {"outcome": "ready", "log_path": "logs/20261201T094251-plain-8765.log"}
    assert boot_identity(as_run(launched)) == ("log:logs/20261201T094251-plain-8765.log", True)
    assert boot_identity(as_run(bench_receipt({"single": records(prompts=4)}, boot="b7"))) == ("b7", True)
    unknown = bench_receipt({"single": records(prompts=4)})
    assert boot_identity(as_run(unknown)) == (f"receipt:{unknown.id}", False)
    # two benches of one launched server: one boot, so the runs are the unit
    again = bench_receipt({"single": records(prompts=4, runs=4, seed=3)}, kept=[0, 1, 2, 3])
    first = bench_receipt({"single": records(prompts=4, runs=4, seed=4)}, kept=[0, 1, 2, 3])
    for receipt in (again, first):
        receipt.body["boot"] = launched.body["boot"]
    assert compare(as_run(first), as_run(again)).metric("e2e").estimate.unit == "run"


def test_judge_cell_is_compare_groups_verdict_for_one_cell_and_metric():
    from forklift.stats import judge_cell

    a, b = boots(3, 1, prompts=16), boots(3, 10, prompts=16, speed=0.85)
    verdict = judge_cell(a, b, "single", "tpot", margin=0.02)
    assert verdict == compare_groups(a, b, margins=Margins({"tpot": 0.02})).cells[0].metric("tpot").decision
    assert verdict.kind == "slower" and verdict.worse and verdict.unit == "boot" and verdict.margin == 0.02
    with pytest.raises(ValueError, match="unknown metric 'speed'"):
        judge_cell(a, b, "single", "speed")


def test_boot_values_feed_the_two_stage_rule():
    from forklift.stats import boot_values, judge
    from forklift.stats.design import boots_needed, pilot, two_stage_estimate

    a, b = boots(3, 1, prompts=16), boots(3, 10, prompts=16, speed=0.85)
    values_a, values_b = boot_values(a, b, "single", "tpot")
    assert values_a.shape == values_b.shape == (3,)
    stage = pilot(values_a, values_b)
    assert boots_needed(stage, 0.05, 12) == 3  # a 15 % slowdown at 5 % noise: the pilot is enough
    verdict = judge(METRICS[2], two_stage_estimate(values_a, values_b, stage))
    assert METRICS[2].key == "tpot" and verdict.kind == "slower"


def test_other_builds_boots_pool_into_the_boot_sd_with_their_degrees_of_freedom():
    a, b = boots(2, 1, prompts=16), boots(2, 10, prompts=16, speed=1.2)
    pool = [boots(2, 20, prompts=16, speed=0.9), boots(2, 30, prompts=16, speed=1.1)]
    alone = compare_groups(a, b).cells[0].metric("decode_tps")
    pooled = compare_groups(a, b, pool_runs=pool).cells[0].metric("decode_tps")
    assert alone.estimate.pooled is None and pooled.estimate.pooled == 4
    assert pooled.estimate.df == 4.0 and pooled.estimate.unit == "boot"  # (2 - 1) x 4 builds
    assert pooled.estimate.change == pytest.approx(alone.estimate.change)  # the pool moves the sd, not the centre
    assert pooled.estimate.mde < alone.estimate.mde  # t(4) against Welch's ~1-2 df
    assert pooled.claim == "faster" and "pooled over 4 builds (4.0 df)" in interval_phrase(pooled.estimate)


def bursty_boots(n, first_seed, every=8, **kwargs):
    """`boots(n, first_seed)` whose requests the host delivered in bursts, all but every `every`-th."""
    return [
        as_run(
            bench_receipt(
                {"single": [r if i % every == 0 else delivered_in_burst(r) for i, r in enumerate(run_records)]},
                kept=[0, 1, 2, 3],
                boot=f"boot-{first_seed + i}",
            )
        )
        for i, run_records in enumerate(records(runs=4, seed=first_seed + i, **kwargs) for i in range(n))
    ]


def test_latency_of_sides_the_host_delivered_unlike_is_undecided_and_decode_is_still_judged():
    """The same build both sides, B's answers held and sent whole (E2E x2) for 7 requests in 8: the E2E and TTFT
    intervals claim B slower, and it is the host's delivery, so they read undecided with the counts."""
    cell = compare_groups(boots(2, 1, prompts=16), bursty_boots(2, 10, prompts=16)).cells[0]
    assert (cell.bursts_a, cell.bursts_b, cell.requests_b) == (0, 112, 128)
    for key in ("e2e", "ttft"):
        result = cell.metric(key)
        metric = next(m for m in METRICS if m.key == key)
        assert judge(metric, result.estimate, result.decision.margin).kind == "slower"  # what it read before
        assert result.claim == "undecided" and result.estimate.low > 0.5
        assert result.decision.unlike.startswith(
            "answers delivered in bursts on B (112 of 128 kept requests) more often than on A (0 of 128; Fisher p ="
        )
        assert result.verdict.startswith("undecided: answers delivered in bursts on B (112 of 128")
        assert "CI +" in result.verdict  # the interval it did not judge stays on screen
    decode = cell.metric("decode_tps")  # burst requests are already out of it: judged on what streamed
    assert decode.decision.unlike is None and "bursts" not in decode.verdict
    assert decode.estimate.n_b == 2 and decode.estimate.low < 0 < decode.estimate.high  # the same speed


def test_one_stray_burst_request_leaves_the_latency_verdict_alone():
    first = records(runs=4, seed=1, prompts=16)
    first[5] = delivered_in_burst(first[5])
    a = [as_run(bench_receipt({"single": first}, kept=[0, 1, 2, 3], boot="boot-1")), *boots(1, 2, prompts=16)]
    cell = compare_groups(a, boots(2, 10, prompts=16, speed=1 / 1.4)).cells[0]
    assert (cell.bursts_a, cell.bursts_b) == (1, 0)
    e2e = cell.metric("e2e")
    assert e2e.decision.unlike is None and e2e.claim == "slower"  # B's real +40% is still claimed


@pytest.mark.parametrize(
    ("counts", "fires"),
    [
        ((1, 8, 0, 8), False),  # one stray burst, however few or many requests: p = 1
        ((1, 1_000_000, 0, 1_000_000), False),
        ((3, 128, 0, 128), False),  # chance can put three on one side
        ((8, 32, 0, 32), True),  # a quarter of one side (p 0.005)
        ((112, 128, 110, 128), False),  # both sides burst alike: like for like
        ((0, 0, 5, 10), False),  # no kept requests on a side: nothing to compare
    ],
)
def test_the_burst_rule_fires_on_shares_chance_does_not_explain(counts, fires):
    assert (unlike_delivery(*counts) is not None) == fires
