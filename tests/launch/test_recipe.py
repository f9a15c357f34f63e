"""`launch --print`: every format shell-safe (a hostile value stays one quoted word on one line), secrets redacted."""

from __future__ import annotations

import json
import subprocess

import pytest

from forklift.errors import UsageError
from forklift.launch.recipe import recipe
from tests.launch.test_resolve import run

HOSTILE = "a\nb $(touch pwned) `id` 'q' \x1b[2J"


def test_lines_keep_each_word_on_one_line_and_quoted():
    lines = recipe(run("base", f"env.VLLM_X={HOSTILE}", f"args.served-model-name-x={HOSTILE}"))
    [env_line] = [line for line in lines if line.startswith("VLLM_X=")]
    assert env_line == "VLLM_X=$'a\\nb $(touch pwned) `id` \\'q\\' \\e[2J'"
    assert not any("\x1b" in line or line == "b $(touch pwned) `id` 'q' " for line in lines)
    assert "HF_TOKEN='<redacted>'" in lines


@pytest.mark.parametrize("fmt", ["sh", "env"])
def test_sh_and_env_formats_read_back_by_bash_as_the_exact_values(fmt, tmp_path):
    resolved = run("base", f"env.VLLM_X={HOSTILE}")
    text = "\n".join(recipe(resolved, fmt))
    if fmt == "sh":  # run the command with `printenv` in place of the engine: bash gives the value back whole
        text = text.replace("env ", "env -i ", 1).split(" vllm ")[0] + " printenv VLLM_X"
    else:
        text += '\nprintf %s "$VLLM_X"'
    out = subprocess.run(["bash", "-c", text], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert out.rstrip("\n") == HOSTILE
    assert not (tmp_path / "pwned").exists()


def test_json_format_is_one_strict_object():
    [text] = recipe(run("base", "args.api-key=sk-1"), "json")
    data = json.loads(text)
    assert data["profile"] == "base" and data["env"]["HF_TOKEN"] == "<redacted>"
    assert data["argv"][data["argv"].index("--api-key") + 1] == "<redacted>"


def test_unknown_format_is_refused():
    with pytest.raises(UsageError, match=r"--format 'yaml': one of lines, sh, env, json"):
        recipe(run("base"), "yaml")
