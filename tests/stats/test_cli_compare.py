"""`forklift compare` through the real command line, on synthetic receipts written through the real schema."""

import json

from tests.cli import forklift
from tests.stats.synthetic import bench_receipt, records, workload, written


def test_compare_prints_paired_table_divergence_and_mde(tmp_path):
    a = written(bench_receipt({"single": records(prompts=8, seed=1)}), tmp_path / "old")
    b_records = records(prompts=8, seed=2, speed=1.3)
    for record in b_records:
        if record.run == 1 and record.prompt_id in ("p2", "p5"):
            record.output_sha256 = "e" * 64
    written(bench_receipt({"single": b_records}, engine_version="0.33.0"), tmp_path / "new")
    done = forklift("compare", a, tmp_path / "new")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "A = 0.32.0" in out and "B = 0.33.0" in out
    assert "not claimable (Δ +" in out and "one boot a side" in out and "95% CI" in out and "MDE" in out
    assert (
        "paired by prompt: 8 pairs" in out
        and "decode tok/s interval: paired bootstrap over 8 prompts of one run a side" in out
    )
    assert "2/8 prompts diverged (greedy, output hashes differ: p2, p5)" in out
    assert "B NOT deterministic: 2/8 prompts wrote different text for the same input" in out


def test_compare_json_is_machine_readable(tmp_path):
    a = written(bench_receipt({"single": records(prompts=4)}), tmp_path)
    done = forklift("compare", a, a, "--json")
    assert done.returncode == 0, done.stderr
    cell = json.loads(done.stdout)["comparisons"][0]["cells"][0]
    decode = next(m for m in cell["metrics"] if m["metric"] == "decode_tps")
    assert decode["estimate"]["change"] == 0 and decode["decision"]["kind"] == "not claimable"
    assert decode["decision"]["margin"] == 0.01 and decode["decision"]["unit"] == "prompt"


def test_compare_refuses_a_different_workload_on_one_line(tmp_path):
    a = written(bench_receipt({"single": records(prompts=4)}), tmp_path / "a")
    b = written(bench_receipt({"single": records(prompts=4)}, ident=workload(max_tokens=256)), tmp_path / "b")
    done = forklift("compare", a, b)
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0
    assert "error: not comparable: workload.max_tokens differs: 64 in" in done.stderr and "256 in" in done.stderr


def test_compare_across_machines_needs_the_flag(tmp_path):
    a = written(bench_receipt({"single": records(prompts=4)}, machine="box-a"), tmp_path / "a")
    b = written(bench_receipt({"single": records(prompts=4)}, machine="box-b"), tmp_path / "b")
    refused = forklift("compare", a, b)
    assert refused.returncode == 1 and "fingerprint.machine_id differs: box-a (box-a)" in refused.stderr
    allowed = forklift("compare", a, b, "--across-machines")
    assert allowed.returncode == 0 and "on box-a" in allowed.stdout and "on box-b" in allowed.stdout
    assert "across machines" in allowed.stdout


def test_bad_inputs_get_one_line_errors(tmp_path):
    a = written(bench_receipt({"single": records(prompts=4)}), tmp_path / "a")
    assert forklift("compare", a).returncode == 2
    missing = forklift("compare", a, tmp_path / "nope")
    assert missing.returncode == 2 and "nope: no such receipt file or folder" in missing.stderr
    for bad_margin, said in (("tpot", "not METRIC=P"), ("speed=2%", "unknown metric 'speed'"), ("tpot=0", "between")):
        refused = forklift("compare", a, a, "--margin", bad_margin)
        assert refused.returncode == 2 and said in refused.stderr and refused.stderr.count("\n") == 1
    (tmp_path / "empty").mkdir()
    empty = forklift("compare", a, tmp_path / "empty")
    assert empty.returncode == 1 and "empty: no bench receipts" in empty.stderr
    (tmp_path / "bad.json").write_text("{not json")
    bad = forklift("compare", a, tmp_path / "bad.json")
    assert bad.returncode == 1 and "bad.json: not a readable receipt" in bad.stderr


def test_more_sides_are_each_compared_with_the_first_and_unpaired_cells_say_so(tmp_path):
    a = written(bench_receipt({"single": records(prompts=8, seed=1)}), tmp_path / "a")
    b = written(bench_receipt({"single": records(prompts=8, seed=2, speed=1.5)}), tmp_path / "b")
    c = written(bench_receipt({"single": records(prompts=8, seed=3, prefix="other")}), tmp_path / "c")
    done = forklift("compare", a, b, c, "--json")
    assert done.returncode == 0, done.stderr
    first, second = json.loads(done.stdout)["comparisons"]
    assert first["paths_b"] == [str(b)] and second["paths_b"] == [str(c)]
    assert first["cells"][0]["paired"] and not second["cells"][0]["paired"]
    table = forklift("compare", a, c)
    assert "unpaired (prompts differ: 0 shared ids; A 8, B 8 requests)" in table.stdout


def test_requests_without_a_partner_are_said_to_be_left_out(tmp_path):
    a = written(bench_receipt({"single": records(prompts=8, runs=1)}, kept=[0]), tmp_path / "a")
    b = written(bench_receipt({"single": records(prompts=8, runs=2)}, kept=[0, 1]), tmp_path / "b")
    done = forklift("compare", a, b)
    assert "paired by prompt: 8 pairs (left out, no partner: A 0, B 8)" in done.stdout


def boots(folder, n, first_seed, **kwargs):
    for i in range(n):
        receipt = bench_receipt(
            {"single": records(prompts=8, runs=4, seed=first_seed + i, noise=0.01, **kwargs)},
            kept=[0, 1, 2, 3],
            boot=f"boot-{first_seed + i}",
        )
        written(receipt, folder)
    return folder


def strict(text):
    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_margins_target_mde_and_the_words_match_the_interval_in_table_and_json(tmp_path):
    a, b = boots(tmp_path / "a", 3, 1), boots(tmp_path / "b", 3, 10, speed=0.9)
    done = forklift("compare", a, b, "--margin", "tpot=5%", "--target-mde", "1")
    assert done.returncode == 0, done.stderr
    assert "B slower by" in done.stdout and "margin ±5.0%" in done.stdout and "margin ±1.0%" in done.stdout
    assert "interval: Welch's t over 3 boots a side" in done.stdout and "margin ±5.0%, 3 boots a side)" in done.stdout
    assert "this design's MDE is" in done.stdout
    data = strict(forklift("compare", a, b, "--json", "--margin", "3").stdout)
    for metric in data["comparisons"][0]["cells"][0]["metrics"]:
        decision, estimate = metric["decision"], metric["estimate"]
        assert decision["margin"] == 0.03 and decision["unit"] == "boot" and decision["n_a"] == 3
        assert (decision["low"], decision["high"]) == (estimate["low"], estimate["high"])
        inside = estimate["low"] >= -0.03 and estimate["high"] <= 0.03
        assert (decision["kind"] == "no practical change") == inside, decision["words"]
