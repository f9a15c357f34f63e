"""`forklift knobs` on the example distribution and on a series that sneaks in a bare read."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.cli import EXAMPLE, forklift

pytestmark = pytest.mark.network


BARE_READ = """\
Description: Read a tuning knob straight from the environment
---
diff --git a/vllm/v1/core/sched/scheduler.py b/vllm/v1/core/sched/scheduler.py
--- a/vllm/v1/core/sched/scheduler.py
+++ b/vllm/v1/core/sched/scheduler.py
@@ -1,3 +1,5 @@
+import os
+_DRAFT_LIMIT = int(os.environ.get("VLLM_FORKLIFT_DRAFT_LIMIT", "0"))
 # SPDX-License-Identifier: Apache-2.0
 # SPDX-FileCopyrightText: Copyright contributors to the vLLM project
 import itertools
"""


def test_example_series_adds_one_registered_knob():
    result = forklift("-c", str(EXAMPLE), "knobs", "--json", "--lint")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["pristine"]["registered"] == 316 and data["patched"]["registered"] == 317
    assert data["added"] == ["VLLM_LOG_KV_CACHE_BLOCKS"] and data["removed"] == []
    assert data["introduced_reads"] == [] and data["lint_ok"] is True


def test_lint_fails_on_a_bare_read_the_series_introduces(tmp_path, vllm_032_tree):
    head = (vllm_032_tree.path / "vllm/v1/core/sched/scheduler.py").read_text().splitlines()[:3]
    assert head == [  # the context BARE_READ relies on: it must apply at fuzz 0, as GNU patch would
        "# SPDX-License-Identifier: Apache-2.0",
        "# SPDX-FileCopyrightText: Copyright contributors to the vLLM project",
        "import itertools",
    ]
    shutil.copy(EXAMPLE / "forklift.toml", tmp_path / "forklift.toml")
    patches = tmp_path / "patches"
    shutil.copytree(EXAMPLE / "patches", patches)
    (patches / "0004-bare-read.patch").write_text(BARE_READ)
    with open(patches / "series", "a") as fh:
        fh.write("0004-bare-read.patch\n")
    plain = forklift("-c", str(tmp_path), "knobs")
    assert plain.returncode == 0
    assert (
        "added by the series: vllm/v1/core/sched/scheduler.py:2: "
        'os.environ.get("VLLM_FORKLIFT_DRAFT_LIMIT") (unregistered)'
    ) in plain.stdout
    lint = forklift("-c", str(tmp_path), "knobs", "--lint")
    assert lint.returncode == 1
    assert (
        "error: the series adds 1 bare read(s) of unregistered knobs, first: vllm/v1/core/sched/scheduler.py:2"
        in lint.stderr
    )
