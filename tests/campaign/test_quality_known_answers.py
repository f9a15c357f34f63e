"""The quality known answers on the real vLLM CPU build and the real model: noop SHIPs, a numerics change HOLDs.

Three builds as a user has them (tests/campaign/known_answers.py): A, A + noop.patch (a comment) and
A + rmsnorm-eps.patch (RMSNorm's epsilon x200: transformers put its perplexity +1.96% on these windows, CI
+1.11%..+2.82%; x100, +0.88%, read UNDECIDED here; the patch header says how it was chosen). One boot each
(order AB, no warm-up: nothing here is timed), the real model (SmolLM2-135M-Instruct, bf16) served by
each, three suites a boot: perplexity over 16 windows of the GPL-3 text, a greedy chat cohort of 16 real
questions (the output hashes the divergence gate reads) and the needle at three depths. The [ship] gates
are quality gates only: perplexity paired over windows, greedy divergence share, canaries (the needle exact).

noop must SHIP (the same numbers: perplexity identical on every window, no text diverged). The damaged
build must HOLD on perplexity. Seen: perplexity 33.754 -> 34.360 (+1.8%, CI +0.6%..+2.9%, MDE ±1.62%:
HOLD at 0.25%), 4/16 greedy texts diverged (UNDECIDED at 25%), and the needle at depth 0.9 answered
'harbor-7391' (the canaries gate holds too). Build A's perplexity equals transformers' on the same token ids.
"""

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from forklift.receipts.store import read_receipts
from tests.campaign.known_answers import make_build, run_campaign
from tests.fixtures.engine import distribution_toml, free_port, tiny_profile_toml

pytestmark = pytest.mark.engine

GPL3 = Path("/usr/share/common-licenses/GPL-3")
QUESTIONS = [
    "What is the capital of France?",
    "Name three primary colors.",
    "How many days are in a leap year?",
    "What does a thermometer measure?",
    "Explain photosynthesis in one sentence.",
    "What is the boiling point of water at sea level?",
    "Who wrote Romeo and Juliet?",
    "What is the largest planet in our solar system?",
    "Give a synonym for happy.",
    "What is 12 times 12?",
    "Why do leaves change color in autumn?",
    "What language is spoken in Brazil?",
    "Describe a cat in one sentence.",
    "What is the chemical symbol for gold?",
    "How many continents are there?",
    "What is the opposite of cold?",
]
CAMPAIGN = """
order = "AB"
warmup_boots = 0
report = "report.md"
[builds.A]
python = "{python}"
[builds.noop]
python = "{python}"
site = "${{FORKLIFT_BUILDS}}/noop"
config = "dist-noop"
[builds.damaged]
python = "{python}"
site = "${{FORKLIFT_BUILDS}}/damaged"
config = "dist-damaged"
[[settings]]
profile = "real"
[[suites]]
kind = "ppl"
corpus = "gpl"
windows = 16
[[suites]]
kind = "bench"
name = "greedy"
cohort = "questions.jsonl"
endpoint = "chat"
max_tokens = 32
sampling = "greedy"
concurrency = [1]
runs = 1
warmup = 0
[[suites]]
kind = "needle"
tokens = 1500
depths = [0.1, 0.5, 0.9]
[ship]
gates = [
  {{ metric = "perplexity", worse = "0.25%" }},
  {{ metric = "divergence", worse = "25%" }},
  {{ metric = "canaries" }},
]
"""
CAMPAIGN_TIMEOUT_S = 1800  # three boots of ~1.5 minutes and their suites: seen 9 minutes on a loaded 2-core box


@pytest.mark.timeout(CAMPAIGN_TIMEOUT_S + 600)
def test_noop_ships_and_a_numerics_change_holds_on_perplexity(engine_python, real_model, tmp_path):
    if not GPL3.is_file():
        pytest.skip(f"{GPL3} not found (Debian's base-files ships it): the perplexity corpus")
    site = next((engine_python.parent.parent / "lib").glob("python3*/site-packages"))
    make_build(site, tmp_path, "noop", "noop.patch")
    make_build(site, tmp_path, "damaged", "rmsnorm-eps.patch")
    corpus = f'[quality.corpora.gpl]\npath = "{GPL3}"\nsha256 = "{hashlib.sha256(GPL3.read_bytes()).hexdigest()}"\n'
    profiles = tiny_profile_toml(engine_python, real_model, free_port(), name="real")
    (tmp_path / "forklift.toml").write_text(distribution_toml(profiles) + "\n" + corpus)
    with open(tmp_path / "questions.jsonl", "w", encoding="utf-8") as cohort:
        for number, question in enumerate(QUESTIONS):
            cohort.write(json.dumps({"id": f"q{number}", "messages": [{"role": "user", "content": question}]}) + "\n")
    (tmp_path / "campaign.toml").write_text(CAMPAIGN.format(python=engine_python))
    returncode, out = run_campaign(tmp_path, CAMPAIGN_TIMEOUT_S)
    print(out)  # the gates' evidence, for the log of a passing run too
    assert returncode == 1, out  # HOLD
    lines = {line.split(":")[0]: line for line in out.splitlines() if " vs A: " in line}
    assert lines["noop vs A"] == "noop vs A: SHIP", out
    assert lines["damaged vs A"].startswith("damaged vs A: HOLD (held by perplexity no worse than 0.25%"), out
    gates = [line.strip() for line in out.splitlines() if line.startswith("  ")]
    assert "identical on all 16 windows" in _gate(gates, "PASS", "noop: perplexity")
    assert "0/16 prompts diverged" in _gate(gates, "PASS", "noop: greedy divergence")
    # held on perplexity: the interval lies wholly beyond the allowance (seen +1.8%, CI +0.6%..+2.9%)
    ppl_gate = next(g for g in gates if " damaged: perplexity" in g)
    assert ppl_gate.startswith("HOLD"), ppl_gate

    receipts = [r for _, r in read_receipts([tmp_path / "receipts"])]
    ppl = {r.build: r.body for r in receipts if r.kind == "quality" and r.body["suite"] == "ppl"}
    needles = {r.build: r.body for r in receipts if r.kind == "canary" and r.body["suite"] == "needle"}
    assert needles["A"]["passed"] and needles["noop"]["passed"], needles
    # the damaged build lost the needle's first word at depth 0.9 (seen: 'harbor-7391'); the prompts carry no
    # salt text (cache_salt keeps them cold), so greedy answers repeat on a build
    assert needles["damaged"]["failure"] == "depth 0.9: answered 'harbor-7391', expected 'blue-harbor-7391'"
    # A's perplexity is transformers' on the same token ids (its bf16 forward on CPU; vLLM's kernels round apart)
    ids = _window_ids(engine_python, real_model, ppl["A"]["items"])
    reference = subprocess.run(
        [
            str(engine_python),
            str(Path(__file__).parents[1] / "quality" / "reference_ppl.py"),
            str(real_model),
            "bfloat16",
        ],
        input=json.dumps(ids),
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    sums = json.loads(reference.stdout)
    assert [w["tokens"] for w in ppl["A"]["items"]] == [len(t) - 1 for t in ids]
    expected = float(sum(sums))
    got = sum(w["logprob_sum"] for w in ppl["A"]["items"])
    assert got == pytest.approx(expected, rel=1e-3), (got, expected)  # seen 1.4e-4 (33.754 vs 33.770)


def _gate(gates: list[str], outcome: str, start: str) -> str:
    return next(g for g in gates if g.startswith(outcome) and g.split(maxsplit=1)[1].startswith(start))


def _window_ids(engine_python: Path, model: Path, windows: list[dict]) -> list[list[int]]:
    """The token ids of each window as the model's tokenizer makes a prompt of it (what vLLM scored)."""
    text = GPL3.read_text(encoding="utf-8")
    script = (
        "import json, sys\nfrom transformers import AutoTokenizer\n"
        f"tok = AutoTokenizer.from_pretrained({str(model)!r})\n"
        "print(json.dumps([tok(t)['input_ids'] for t in json.load(sys.stdin)]))"
    )
    done = subprocess.run(
        [str(engine_python), "-c", script],
        input=json.dumps([text[w["start"] : w["end"]] for w in windows]),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout)
