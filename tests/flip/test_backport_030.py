"""flip 0.30.0 -> 0.31.0 on real sdists: a one-hunk backport of 7 added lines, of which 0.31.0 has all but one.

The case the retire rule was asked for: a team backported upstream's `/kv_event_sources` route (added in
0.31.0, vllm/entrypoints/serve/instrumentator/basic.py) with a gate of its own on the last line, and says why
in its header (`Retires-When:`). 0.31.0 carries the route with upstream's gate, so every added line but the
last is present (flip counts the 5 that are not blank) and the last, the point of the patch, is not: flip must
read "partly upstream", quote that line and show the Retires-When condition, never "retire candidate". The
patch is cut from the sdists at test time.
"""

from __future__ import annotations

import json

import pytest

from forklift.config.schema import PypiPin
from forklift.series.render import file_diff
from tests.cli import forklift
from tests.fixtures.pypi import materialize_or_skip
from tests.flip.realseries import VLLM_031, replaced

pytestmark = pytest.mark.network

VLLM_030 = PypiPin(
    source="pypi",
    package="vllm",
    version="0.30.0",
    sha256="5f8f4e890c042ffa1c3e103f81c35e2d96f60a0a175ac43a4adbae7006bef62b",
)
BASIC = "vllm/entrypoints/serve/instrumentator/basic.py"
UPSTREAM_GATE = "    return client.get_kv_event_sources() if client is not None else {}\n"
OUR_GATE = "    return client.get_kv_event_sources() if client is not None and client.kv_events_enabled else {}\n"
HEADER = """Description: Backport the /kv_event_sources route from 0.31.0
 Ours answers {} while KV events are off. On 0.31 only the gate differs.
Retires-When: upstream answers {} while KV events are off
Author: Test <test@example.com>
---
"""


def test_the_backport_reads_partly_upstream_with_its_gate_quoted_and_its_retires_when(tmp_path):
    v30, v31 = materialize_or_skip(VLLM_030).path, materialize_or_skip(VLLM_031).path
    before, after = (v30 / BASIC).read_bytes(), (v31 / BASIC).read_bytes()
    assert UPSTREAM_GATE.encode() not in before  # the route is new in 0.31.0
    ours = file_diff(BASIC, before, replaced(after, UPSTREAM_GATE, OUR_GATE))
    added = [line for line in ours.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert len(added) == 7 and ours.count("\n@@") == 1  # one hunk, seven added lines
    dist = tmp_path / "dist"
    (dist / "patches").mkdir(parents=True)
    (dist / "patches" / "0001-kv-event-sources.patch").write_text(HEADER + ours, encoding="utf-8")
    (dist / "patches" / "series").write_text("0001-kv-event-sources.patch\n", encoding="utf-8")
    (dist / "forklift.toml").write_text(
        f'[engine]\nkind = "vllm"\n[upstream]\nsource = "pypi"\npackage = "vllm"\nversion = "0.30.0"\n'
        f'sha256 = "{VLLM_030.sha256}"\n[series]\ndir = "patches"\n',
        encoding="utf-8",
    )
    report_md = tmp_path / "flip.md"
    proc = forklift("-c", dist, "flip", "0.31.0", "--json", "--report", report_md)
    assert proc.returncode == 1, proc.stderr  # a patch to re-cut: the series does not move as it is
    [row] = json.loads(proc.stdout)["patches"]
    assert row["verdict"] == "recut"
    retire = row["retire"]
    assert (retire["present"], retire["total"], retire["whole"]) == (4, 5, False)  # the blank two not counted
    assert retire["differing"] == [[OUR_GATE.strip(), UPSTREAM_GATE.strip()]]
    markdown = report_md.read_text()
    assert "retire candidate" not in markdown
    assert "partly upstream: re-cut (retires when: upstream answers {} while KV events are off)" in markdown
    assert f"not upstream: `{OUR_GATE.strip()}`" in markdown
