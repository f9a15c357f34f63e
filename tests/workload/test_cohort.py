"""Cohort files: every bad input stops with file, line and key; identity ignores the salt."""

import json

import pytest

from forklift.errors import UsageError
from forklift.workload import load_cohort, prepare, synthetic_workload
from forklift.workload.prepare import salt_for


def write(tmp_path, *lines):
    path = tmp_path / "cohort.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def chat(id_, text="hello", **extra):
    return {"id": id_, "messages": [{"role": "user", "content": text}], **extra}


@pytest.mark.parametrize(
    "lines, message",
    [
        (["{not json"], "cohort.jsonl:1: not a readable cohort line"),
        ([{"messages": [{"role": "user", "content": "x"}]}], "cohort.jsonl:1: id: missing \\(required\\)"),
        ([{"id": "a"}], "give exactly one of 'messages' or 'prompt'"),
        ([{"id": "a", "prompt": "x", "messages": [{"role": "user", "content": "x"}]}], "exactly one"),
        ([{"id": "a", "prompt": "x", "max_tokens": 0}], "cohort.jsonl:1: max_tokens"),
        ([{"id": "a", "prompt": "x", "temperature": 0}], "cohort.jsonl:1: temperature: unknown key"),
        ([chat("a"), chat("a")], "cohort.jsonl:2: id 'a' already used on line 1"),
        ([chat("a"), {"id": "b", "prompt": "x"}], "mixes 'messages' and 'prompt'"),
        ([{"id": "a", "messages": []}], "cohort.jsonl:1: messages"),
    ],
)
def test_bad_cohort_lines(tmp_path, lines, message):
    with pytest.raises(UsageError, match=message):
        load_cohort(write(tmp_path, *lines))


def test_empty_and_missing_files(tmp_path):
    with pytest.raises(UsageError, match="cohort has no prompts"):
        load_cohort(write(tmp_path, ""))
    with pytest.raises(UsageError, match=r"nope\.jsonl: cannot read cohort"):
        load_cohort(tmp_path / "nope.jsonl")


def test_unknown_preset(tmp_path):
    with pytest.raises(UsageError, match="sampling preset 'hot'"):
        load_cohort(write(tmp_path, chat("a")), preset="hot")


def test_endpoint_and_defaults(tmp_path):
    w = load_cohort(write(tmp_path, chat("a", max_tokens=3), chat("b")), max_tokens=9, ignore_eos=True)
    assert w.endpoint == "chat"
    assert [(i.max_tokens, i.ignore_eos) for i in w.items] == [(3, True), (9, True)]
    assert load_cohort(write(tmp_path, {"id": "a", "prompt": "x"})).endpoint == "completions"


def test_identity_hash_ignores_salt_but_not_content(tmp_path):
    base = load_cohort(write(tmp_path, chat("a"), chat("b")))
    again = load_cohort(write(tmp_path, chat("a"), chat("b")), salt_nonce="other")
    changed = load_cohort(write(tmp_path, chat("a"), chat("b", "bye")))
    greedy = load_cohort(write(tmp_path, chat("a"), chat("b")), preset="greedy")
    assert base.identity().hash == again.identity().hash
    assert len({base.identity().hash, changed.identity().hash, greedy.identity().hash}) == 3
    assert base.identity().corpus_hash != changed.identity().corpus_hash
    assert base.identity().prompts == 2 and base.identity().salted


def requests(workload, cell="c1", run=0, count=None):
    import asyncio

    return asyncio.run(prepare(workload, model="m", cell=cell, run=run, count=count))


def test_salt_is_unique_per_cell_run_prompt_and_stable(tmp_path):
    w = load_cohort(write(tmp_path, chat("a"), chat("b")))
    firsts = {
        (cell, run): [r.body["messages"][0]["content"] for r in requests(w, cell, run)]
        for cell in ("c1", "c2")
        for run in (0, 1)
    }
    texts = [t for pair in firsts.values() for t in pair]
    assert len(set(texts)) == len(texts) == 8
    assert all(t.endswith("hello") and t.startswith("[") for t in texts)
    assert [r.body["messages"][0]["content"] for r in requests(w, "c1", 0)] == firsts[("c1", 0)]
    assert salt_for(w, "c1", 0, "a") != salt_for(load_cohort(write(tmp_path, chat("a")), salt_nonce="x"), "c1", 0, "a")


def test_unsalted_prompts_are_sent_as_written(tmp_path):
    w = load_cohort(write(tmp_path, {"id": "a", "prompt": "same"}), salted=False)
    assert [r.body["prompt"] for r in requests(w, run=0) + requests(w, run=1)] == ["same", "same"]


def test_sampling_presets_and_item_override(tmp_path):
    w = load_cohort(write(tmp_path, chat("a"), chat("b", sampling={"temperature": 0.7})), preset="seeded", seed=10)
    bodies = [r.body for r in requests(w)]
    assert bodies[0]["seed"] == 10 and bodies[1]["seed"] == 11 and bodies[1]["temperature"] == 0.7
    greedy = load_cohort(write(tmp_path, chat("a")), preset="greedy", max_tokens=4, ignore_eos=True)
    assert requests(greedy)[0].body | {"messages": None} == {
        "model": "m",
        "messages": None,
        "max_tokens": 4,
        "ignore_eos": True,
        "temperature": 0.0,
    }
    default = load_cohort(write(tmp_path, chat("a")))
    assert set(requests(default)[0].body) == {"model", "messages"}


def test_count_cycles_the_cohort_with_distinct_ids(tmp_path):
    w = load_cohort(write(tmp_path, chat("a"), chat("b")))
    assert [r.prompt_id for r in requests(w, count=5)] == ["a", "b", "a#1", "b#1", "a#2"]


def test_multipart_content_gets_a_leading_salt_part(tmp_path):
    parts = [{"type": "text", "text": "hello"}]
    w = load_cohort(write(tmp_path, {"id": "a", "messages": [{"role": "user", "content": parts}]}))
    content = requests(w)[0].body["messages"][0]["content"]
    assert content[0]["type"] == "text" and content[0]["text"].startswith("[") and content[1:] == parts


def test_synthetic_bad_sizes():
    with pytest.raises(UsageError, match=r"input tokens \(0\)"):
        synthetic_workload(input_tokens=0, output_tokens=4, count=1)
    with pytest.raises(UsageError, match="sampling preset 'x'"):
        synthetic_workload(input_tokens=4, output_tokens=4, count=1, preset="x")
