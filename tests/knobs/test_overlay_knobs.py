"""`forklift knobs` reads the `[overlay] dir` files too: they land over the tree after the series."""

from __future__ import annotations

import json

from tests.series.distro import MOD, distribution, edit, forklift, write_files

REGISTRY = 'environment_variables = {\n    "VLLM_A": lambda: 1,\n}\n'


def test_an_overlay_file_that_registers_a_knob_and_one_that_reads_a_bare_one_are_seen(tmp_path):
    dist = distribution(
        tmp_path,
        {"vllm/envs.py": REGISTRY, "vllm/mod.py": MOD},
        {"a.patch": edit("vllm/mod.py", 20, "v20 = 200")},
        extra_toml='[overlay]\ndir = "overlay"\n',
    )
    overlay = {
        "vllm/envs.py": REGISTRY.replace("}\n", '    "VLLM_B": lambda: 2,\n}\n'),
        "vllm/kvarn.py": 'import os\n\nLIMIT = os.environ.get("VLLM_C")\n',
    }
    write_files(dist / "overlay", overlay)
    proc = forklift("-c", str(dist), "knobs", "--json", "--lint")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the overlay's bare read of an unregistered knob
    data = json.loads(proc.stdout)
    assert (data["pristine"]["registered"], data["patched"]["registered"]) == (1, 2)
    assert data["added"] == ["VLLM_B"] and data["removed"] == []
    assert data["introduced_reads"] == ['vllm/kvarn.py:3: os.environ.get("VLLM_C") (unregistered)']
