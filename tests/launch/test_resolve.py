"""Profile resolution (pure): axes, extends, TOML tables as JSON flags, overrides, redaction, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from forklift.config.load import parse_config
from forklift.engines.vllm import VLLM
from forklift.errors import ConfigError, UsageError
from forklift.launch.resolve import parse_sets, printed_lines, resolve, setting_name
from tests.fixtures.pypi import VLLM_032_UPSTREAM

PIN = "\n" + VLLM_032_UPSTREAM

NVLINK_MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}

PROFILES = """
[profiles.base]
model = "Qwen/Qwen3-8B"
served_name = "qwen3"
port = 8011
args = { max-model-len = 8192, enforce-eager = true, dtype = "bfloat16" }
env = { VLLM_LOGGING_LEVEL = "INFO", HF_TOKEN = "hf_secret" }
defaults = { spec = "off", ctx = "fast" }

[profiles.base.axes.spec.ngram.args]
speculative-config = { method = "ngram", num_speculative_tokens = 3, prompt_lookup_max = 4 }

[profiles.base.axes.spec.off]

[profiles.base.axes.ctx.fast]
args = { max-model-len = 4096 }

[profiles.base.axes.ctx.long]
args = { max-model-len = 32768, enable-chunked-prefill = true }
env = { VLLM_ALLOW_LONG_MAX_MODEL_LEN = true }

[profiles.tools]
extends = "base"
args = { enable-auto-tool-choice = true, tool-call-parser = "hermes", enforce-eager = false }
"""


def profiles(text: str = PROFILES):
    return parse_config(PIN + text, Path("forklift.toml")).data.profiles


def run(name: str, *sets: str):
    choices, overrides = parse_sets(list(sets))
    return resolve(profiles(), name, choices, overrides, VLLM)


def test_defaults_give_the_exact_argv_and_env():
    r = run("base")
    assert r.argv == [
        "vllm",
        "serve",
        "Qwen/Qwen3-8B",
        "--served-model-name",
        "qwen3",
        "--host",
        "127.0.0.1",
        "--port",
        "8011",
        "--max-model-len",
        "4096",
        "--enforce-eager",
        "--dtype",
        "bfloat16",
    ]
    assert r.env == {"VLLM_LOGGING_LEVEL": "INFO", "HF_TOKEN": "hf_secret", **NVLINK_MULTICAST_OFF}
    assert r.choices == {"spec": "off", "ctx": "fast"}


def test_axis_choice_turns_a_toml_table_into_a_json_flag():
    r = run("base", "spec=ngram", "ctx=long")
    i = r.argv.index("--speculative-config")
    assert r.argv[i + 1] == '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4}'
    assert r.argv[r.argv.index("--max-model-len") + 1] == "32768"
    assert r.argv.count("--max-model-len") == 1  # replaced in place, not repeated
    assert r.env["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] == "1"


def test_extends_merges_and_false_negates_a_switch():
    r = run("tools")
    assert "--no-enforce-eager" in r.argv and "--enforce-eager" not in r.argv
    assert r.argv[r.argv.index("--tool-call-parser") + 1] == "hermes"
    assert r.argv[r.argv.index("--dtype") + 1] == "bfloat16"  # inherited


def test_set_overrides_flags_and_env_with_toml_values():
    r = run("base", "args.max-model-len=2048", 'args.kv-transfer-config={kv_connector = "X"}', "env.VLLM_X=2")
    assert r.argv[r.argv.index("--max-model-len") + 1] == "2048"
    assert r.argv[r.argv.index("--kv-transfer-config") + 1] == '{"kv_connector":"X"}'
    assert r.env["VLLM_X"] == "2" and r.env_sources["VLLM_X"] == "--set"


def test_print_redacts_secrets():
    lines = printed_lines(run("base", "args.api-key=sk-123"))
    assert "HF_TOKEN=<redacted>" in lines
    assert lines[lines.index("--api-key") + 1] == "<redacted>"
    assert not any("hf_secret" in line or "sk-123" in line for line in lines)


def test_setting_label_and_receipt_record_redact_secrets():
    """The label compare and report group by is made in one place; a secret given there never leaves it."""
    from forklift.launch.boot import profile_record

    resolved = run("base", "args.api-key=sk-123", "env.ANTHROPIC_API_KEY=sk-ant-9", "env.VLLM_X=2")
    assert setting_name(resolved) == "base spec=off ctx=fast api-key=<redacted> ANTHROPIC_API_KEY=<redacted> VLLM_X=2"
    record = profile_record(resolved)
    assert record["env"]["HF_TOKEN"] == record["env"]["ANTHROPIC_API_KEY"] == "<redacted>"
    assert not any(secret in str(record) for secret in ("sk-123", "sk-ant-9", "hf_secret"))
    assert resolved.api_key == "sk-123"  # the launch's own client still sends it


def test_unknown_profile_is_refused():
    with pytest.raises(UsageError, match=r"unknown profile 'nope' \(profiles: base, tools\)"):
        run("nope")


def test_unknown_axis_is_refused():
    with pytest.raises(UsageError, match=r"profile base: unknown axis 'spek' \(axes: ctx, spec"):
        run("base", "spek=ngram")


def test_unknown_axis_value_is_refused_not_fallen_through():
    with pytest.raises(UsageError, match=r"axis spec: unknown value 'mtp' \(one of ngram, off\)"):
        run("base", "spec=mtp")


def test_axis_without_default_needs_a_value():
    text = PROFILES.replace('defaults = { spec = "off", ctx = "fast" }', 'defaults = { ctx = "fast" }')
    with pytest.raises(UsageError, match=r"axis spec needs a value: --set spec=ngram\|off"):
        resolve(profiles(text), "base", {}, {}, VLLM)


def test_cycle_in_extends_is_refused():
    text = PROFILES + '\n[profiles.a]\nextends = "b"\n[profiles.b]\nextends = "a"\n'
    with pytest.raises(ConfigError, match=r"extends cycle a -> b -> a"):
        resolve(profiles(text), "a", {}, {}, VLLM)


def test_extends_of_a_missing_profile_names_the_key():
    text = PROFILES + '\n[profiles.c]\nextends = "gone"\n'
    with pytest.raises(ConfigError, match=r"profiles.c.extends: unknown profile 'gone'"):
        resolve(profiles(text), "c", {}, {}, VLLM)


def test_a_date_is_not_a_flag_value():
    text = PROFILES + '\n[profiles.d]\nextends = "base"\nargs = { seed = 2026-11-30 }\n'
    with pytest.raises(ConfigError, match=r"profiles.d \(profile d\): --seed = datetime.date\(2026, 11, 30\): a date"):
        resolve(profiles(text), "d", {}, {}, VLLM)


def test_wrong_type_in_a_profile_key_names_file_and_key():
    with pytest.raises(ConfigError, match=r"forklift.toml: profiles.base.port: .*integer"):
        profiles(PROFILES.replace("port = 8011", 'port = "eighty"'))


def test_unknown_profile_key_is_refused():
    with pytest.raises(ConfigError, match=r"profiles.base.flags: unknown key"):
        profiles(PROFILES.replace("served_name", "flags = {}\nserved_name"))


def test_host_and_port_belong_to_the_profile_not_args():
    text = PROFILES + '\n[profiles.e]\nextends = "base"\nargs = { port = 1 }\n'
    with pytest.raises(ConfigError, match=r"profiles.e: set --port with the profile's own key"):
        resolve(profiles(text), "e", {}, {}, VLLM)


def test_set_needs_key_and_value():
    with pytest.raises(UsageError, match=r"--set 'spec': expected KEY=VALUE"):
        parse_sets(["spec"])


def test_profile_without_model_is_refused():
    with pytest.raises(ConfigError, match=r"profiles.m: no model"):
        resolve(profiles("[profiles.m]\nport = 1\n"), "m", {}, {}, VLLM)


TP = """
[profiles.tp2]
model = "/tmp/model"
gpus = [2, 3]
args = { tensor-parallel-size = 2 }

[profiles.tp2dp2]
model = "/tmp/model"
gpus = [0, 1, 2, 3]
args = { tensor-parallel-size = 2, data-parallel-size = 2 }

[profiles.ray]
model = "/tmp/model"
gpus = [0, 1]
args = { tensor-parallel-size = 2, pipeline-parallel-size = 2 }
ray = { head = "10.0.0.1", workers = ["10.0.0.2"], gpus_per_node = 2 }
"""


def tp(name: str):
    return resolve(profiles(TP), name, {}, {}, VLLM)


def test_tensor_parallel_profile_gets_its_gpus_and_multicast_off():
    r = tp("tp2")
    assert r.world_size == 2 and r.gpus == [2, 3]
    assert r.env == {"CUDA_VISIBLE_DEVICES": "2,3", **NVLINK_MULTICAST_OFF}
    assert r.env_sources["NCCL_NVLS_ENABLE"] == "forklift (NVLink multicast off)"
    from forklift.launch.resolve import rank_lines

    lines = rank_lines(r)
    assert lines[0].startswith("gpu 2 on this host: rank 0 (TP 0") and lines[1].startswith(
        "gpu 3 on this host: rank 1 (TP 1"
    )
    assert all(
        "CUDA_VISIBLE_DEVICES=2,3 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1" in x
        for x in lines
    )


def test_data_parallel_times_tensor_parallel_is_the_world():
    r = tp("tp2dp2")
    assert r.world_size == 4 and r.parallel == {"--tensor-parallel-size": 2, "--data-parallel-size": 2}


def test_gpus_that_do_not_make_the_world_are_refused_naming_both():
    bad = TP.replace("gpus = [2, 3]", "gpus = [2]")
    with pytest.raises(
        ConfigError, match=r"profiles.tp2.gpus: 1 GPU\(s\) x 1 node\(s\) for a world of 2 \(tensor-parallel-size 2\)"
    ):
        resolve(profiles(bad), "tp2", {}, {}, VLLM)


def test_a_profile_cannot_turn_multicast_back_on():
    bad = TP.replace(
        "args = { tensor-parallel-size = 2 }\n\n[profiles.tp2dp2]",
        "args = { tensor-parallel-size = 2 }\nenv = { NCCL_NVLS_ENABLE = 1 }\n\n[profiles.tp2dp2]",
    )
    with pytest.raises(ConfigError, match="env NCCL_NVLS_ENABLE=1: forklift keeps it 0"):
        resolve(profiles(bad), "tp2", {}, {}, VLLM)


def test_multi_node_ray_profile_prints_head_and_worker_commands():
    from forklift.launch.resolve import ray_commands

    r = tp("ray")
    assert r.world_size == 4 and "--distributed-executor-backend" in r.argv and r.argv[-1] == "ray"
    head, worker, then = ray_commands(r)
    assert head.startswith("on 10.0.0.1: CUDA_VISIBLE_DEVICES=0,1 NCCL_NVLS_ENABLE=0")
    assert head.endswith("ray start --head --port 6379 --num-gpus 2")
    assert worker.startswith("on 10.0.0.2: ") and worker.endswith("ray start --address 10.0.0.1:6379 --num-gpus 2")
    assert then.startswith("then on 10.0.0.1")


def test_multi_node_ray_profile_prints_the_placement_group_and_the_exact_serve_argv():
    import json

    from forklift.launch.recipe import recipe

    lines = recipe(tp("ray"))
    start = lines.index("# ray placement group (vLLM asks the cluster for it)")
    head, *bundles = lines[start + 1 :]
    assert head == "strategy PACK, 4 bundles (world size 4 over 2 nodes x 2 GPUs):"
    assert [json.loads(b) for b in bundles] == [{"GPU": 1.0, "node:10.0.0.1": 0.001}] + [{"GPU": 1.0}] * 3
    argv = lines[lines.index("# argv") + 1 : lines.index("# env")]
    assert argv[-6:] == [
        "--tensor-parallel-size", "2", "--pipeline-parallel-size", "2", "--distributed-executor-backend", "ray"
    ]  # fmt: skip
