"""A boot vLLM refused for GPU memory is a ladder's memory refusal, with vLLM's own figures as the reason.

Replayed on the H200 ladder's refused rung (docs/gpu-report, gpu_memory_utilization 0.999 on vLLM 0.26.0):
the lines its boot receipt kept, its fatal line (as forklift recorded it, the log prefix stripped) and the
log's last lines. The same check in 0.32.0 has that sentence and a second one, for weights another process
holds; releases whose check sat in gpu_worker.py named no device. Each wording is a memory refusal.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from forklift.engines.vllm import VLLM
from forklift.ladder.run import boot_failure
from forklift.launch.bootlog import parse_boot_log
from forklift.launch.schema import BootBody
from forklift.receipts.store import read_receipt
from tests.launch.test_logfacts import source_strings

REFUSED = (
    Path(__file__).resolve().parents[2]
    / "docs/gpu-report/receipts/ladder/20261201T111920-boot-f67ba6a40f99.json.gz"  # the 0.999 rung's boot
)
H200_026 = (  # verbatim from that receipt's facts.fatal
    "ValueError: Free memory on device cuda:0 (139.29/139.8 GiB) on startup is less than desired GPU memory "
    "utilization (0.999, 139.66 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
)
# vllm 0.32.0, vllm/v1/worker/utils.py request_memory(): the wording for weights held outside the engine,
# rendered with this rung's figures (and the 0.22 GiB such a process might hold).
EXTERNAL_032 = (
    "ValueError: Free memory on device cuda:0 (139.29/139.8 GiB) on startup is less than the engine's budget "
    "after excluding external process's weights (0.999, 139.44 GiB). Decrease GPU memory utilization or reduce "
    "GPU memory used by other processes."
)
NO_DEVICE = (  # the older gpu_worker.py wording: no device named
    "ValueError: Free memory on device (139.29/139.8 GiB) on startup is less than desired GPU memory utilization "
    "(0.999, 139.66 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
)


def replay(lines: list[str]) -> BootBody:
    """The refused rung's boot receipt with its facts parsed again from `lines`, by forklift's log parser."""
    recorded = read_receipt(REFUSED).body
    return BootBody.model_validate({**recorded, "facts": parse_boot_log(lines, VLLM).model_dump()})


def test_the_h200_refusal_is_a_memory_refusal_with_vllms_figures():
    recorded = read_receipt(REFUSED).body
    assert recorded["facts"]["fatal"] == H200_026 and recorded["outcome"] == "died"
    # the log's tail ends in the API server's generic line; the root cause is still the refusal
    assert recorded["last_lines"][-1].startswith("RuntimeError: Engine core initialization failed")
    body = replay([H200_026, *recorded["last_lines"]])
    assert body.facts.fatal == H200_026
    assert (body.facts.memory_available_gib, body.facts.memory_needed_gib) == (139.29, 139.66)
    assert boot_failure(body) == "died: 139.29 GiB available, 139.66 needed"


@pytest.mark.parametrize(
    ("line", "needed"), [(H200_026, "139.66"), (EXTERNAL_032, "139.44"), (NO_DEVICE, "139.66")], ids=str
)
def test_every_wording_of_vllms_free_memory_check_is_a_memory_refusal(line, needed):
    recorded = read_receipt(REFUSED).body
    for tail_first in (False, True):  # the generic failure line neither hides nor outranks the refusal
        lines = [*recorded["last_lines"], line] if tail_first else [line, *recorded["last_lines"]]
        body = replay(lines)
        assert body.facts.fatal == line
        assert boot_failure(body) == f"died: 139.29 GiB available, {needed} needed"


# vllm 0.32.0, same function, rendered with this rung's figures: weights another process holds exceed the whole
# budget (no free-memory figure in it).
EXTERNAL_WEIGHTS_032 = (
    "ValueError: Externally held weights on device cuda:0 (139.7/139.8 GiB) exceed the desired GPU memory "
    "utilization (0.999, 139.66 GiB). Increase GPU memory utilization or reduce GPU memory used by other processes."
)


def test_external_weights_over_the_budget_are_a_memory_refusal_named_by_vllms_line():
    recorded = read_receipt(REFUSED).body
    for lines in ([*recorded["last_lines"], EXTERNAL_WEIGHTS_032], [EXTERNAL_WEIGHTS_032, *recorded["last_lines"]]):
        body = replay(lines)
        assert body.facts.fatal == EXTERNAL_WEIGHTS_032  # outranks the generic "Engine core initialization failed"
        assert boot_failure(body) == f"died: {EXTERNAL_WEIGHTS_032}"


def test_a_boot_that_got_ready_is_no_failure_and_one_without_a_fatal_line_says_so():
    assert boot_failure(BootBody(outcome="ready")) is None
    assert boot_failure(BootBody(outcome="timeout")) == "timeout: no fatal line in the log"


@pytest.mark.network
def test_the_pinned_032_source_words_its_free_memory_check_as_matched(vllm_032_tree):
    strings = source_strings(vllm_032_tree.path / "vllm/v1/worker/utils.py")
    checks = sorted(s for s in strings if s.startswith("Free memory on device {} (") and "is less than" in s)
    assert len(checks) == 2, checks  # desired utilization, and the budget after external weights
    for check in checks:
        line = "ValueError: " + check.format("cuda:0", "139.29", "139.8", "0.999", "139.66")
        assert boot_failure(replay([line])) == "died: 139.29 GiB available, 139.66 needed"
