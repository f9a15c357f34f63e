"""The after-stop GPU idle check (issue 16): the verdict over nvidia-smi readings, and its skip on a CPU box.

The readings are given as data (no GPU here); the shapes are nvidia-smi's (index -> MiB used, index ->
[(pid, MiB)]), as the H200 campaign recorded them (docs/gpu-report: 0 MiB used after both stops).
"""

from __future__ import annotations

import shutil

import pytest

from forklift.errors import ForkliftError
from forklift.launch import gpus


def test_two_gpus_back_to_their_pre_boot_memory_read_idle():
    verdict = gpus.idle_verdict([0, 1], {0: 1, 1: 0}, {0: 3, 1: 0}, {}, ours={100, 101})
    assert (
        verdict
        == "idle: no engine process left, memory back to the pre-boot figure (0: 3 MiB (before 1), 1: 0 MiB (before 0))"
    )


def test_a_rank_left_on_a_gpu_is_an_error_naming_gpu_and_process():
    with pytest.raises(ForkliftError, match=r"^gpu 1: engine process 101 still holds 70,312 MiB after stop$"):
        gpus.idle_verdict([0, 1], {0: 0, 1: 0}, {0: 0, 1: 70_312}, {1: [(999, 10), (101, 70_312)]}, ours={100, 101})


def test_memory_not_returned_is_an_error_even_without_a_process_of_ours():
    with pytest.raises(ForkliftError, match=r"^gpu 0: 4,096 MiB used after stop, 0 MiB before the boot$"):
        gpus.idle_verdict([0], {0: 0}, {0: 4096}, {0: [(999, 4096)]}, ours={100})


def test_another_users_process_is_not_ours_and_memory_within_slack_is_idle():
    assert gpus.idle_verdict([0], {0: 500}, {0: 600}, {0: [(999, 500)]}, ours={100}).startswith("idle:")


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this box has nvidia-smi")
def test_a_box_without_nvidia_smi_skips_with_a_word():
    assert gpus.memory_used() is None and gpus.NO_SMI == "skipped: no nvidia-smi on this machine"
