"""The after-stop GPU idle check (issue 16): the verdict over nvidia-smi readings, and its skip on a CPU box.

The readings are given as data (no GPU here); the shapes are nvidia-smi's (index -> MiB used, index ->
[(pid, MiB)], index -> utilization %), as the H200 campaign recorded them (docs/gpu-report: 0 MiB used after
both stops), and the kernel log's Xid lines in the driver's format (NVIDIA's Xid documentation).
"""

from __future__ import annotations

import shutil

import pytest

from forklift.errors import ForkliftError
from forklift.launch import gpus


def state(memory, utilization=None, xids=()):
    return gpus.GpuState(memory, utilization or dict.fromkeys(memory, 0), frozenset(xids) if xids is not None else None)


# nvidia-smi's bus ids of a two-GPU host, and Xid lines as the driver writes them into the kernel log
BUSES = {gpus.bus_key("00000000:3B:00.0"): 0, gpus.bus_key("00000000:86:00.0"): 1}
XID_79 = "[ 8843.201144] NVRM: Xid (PCI:0000:86:00): 79, pid=74488, name=python3, GPU has fallen off the bus."
XID_OLD = "[  127.234567] NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception: ESR 0x405840=0x0"


def verdict(gpu_list, before, after, procs=None, ours=frozenset({100, 101})):
    return gpus.idle_verdict(gpu_list, before, after, procs or {}, set(ours), BUSES)


def test_two_gpus_back_to_their_pre_boot_memory_read_idle():
    assert verdict([0, 1], state({0: 1, 1: 0}, xids=[XID_OLD]), state({0: 3, 1: 0}, xids=[XID_OLD])) == (
        "idle: no engine process left, memory back to the pre-boot figure (0: 3 MiB (before 1), 1: 0 MiB (before 0)),"
        " utilization 0%, no new Xid in the kernel log"
    )


def test_a_rank_left_on_a_gpu_is_an_error_naming_gpu_and_process():
    with pytest.raises(ForkliftError, match=r"^gpu 1: engine process 101 still holds 70,312 MiB after stop$"):
        verdict([0, 1], state({0: 0, 1: 0}), state({0: 0, 1: 70_312}), {1: [(999, 10), (101, 70_312)]})


def test_memory_not_returned_is_an_error_even_without_a_process_of_ours():
    with pytest.raises(ForkliftError, match=r"^gpu 0: 4,096 MiB used after stop, 0 MiB before the boot$"):
        verdict([0], state({0: 0}), state({0: 4096}), {0: [(999, 4096)]}, ours={100})


def test_another_users_process_is_not_ours_and_memory_within_slack_is_idle():
    assert verdict([0], state({0: 500}), state({0: 600}), {0: [(999, 500)]}, ours={100}).startswith("idle:")


def test_a_gpu_still_busy_after_stop_is_not_idle():
    with pytest.raises(ForkliftError, match=r"^gpu 1: 37% utilized after stop \(not back to idle\)$"):
        verdict([0, 1], state({0: 0, 1: 0}), state({0: 0, 1: 0}, {0: 0, 1: 37}))


def test_an_xid_since_the_boot_names_the_gpu_and_the_drivers_line():
    with pytest.raises(
        ForkliftError, match=r"^gpu 1: Xid 79 in the kernel log since the boot: .*fallen off the bus\.$"
    ):
        verdict([0, 1], state({0: 0, 1: 0}, xids=[XID_OLD]), state({0: 0, 1: 0}, xids=[XID_OLD, XID_79]))


def test_an_xid_on_a_gpu_outside_the_profile_is_another_users_and_an_unreadable_log_is_said():
    assert verdict([0], state({0: 0}), state({0: 0}, xids=[XID_79])).startswith("idle:")  # GPU 1 is not ours
    unreadable = verdict([0], state({0: 0}, xids=None), state({0: 0}, xids=None))
    assert unreadable.endswith("utilization 0%, kernel log not readable for Xids")


def test_pci_addresses_of_nvidia_smi_and_the_kernel_agree():
    assert gpus.bus_key("00000000:3B:00.0") == gpus.bus_key("0000:3b:00") == "3b:00"


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this box has nvidia-smi")
def test_a_box_without_nvidia_smi_skips_with_a_word():
    assert gpus.memory_used() is None and gpus.gpu_state() is None and gpus.settled_state([0]) is None
    assert gpus.NO_SMI == "skipped: no nvidia-smi on this machine"
