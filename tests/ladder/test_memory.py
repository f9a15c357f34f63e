"""Memory samplers: the real /proc of this box, a real process group, nvidia-smi's query format."""

import subprocess
import sys

from forklift.ladder.memory import MemoryWatch, host_available, parse_nvidia_smi, process_tree_rss, worst
from forklift.launch.supervise import Server, stop


def test_nvidia_smi_output_of_a_real_h200_parses():
    # what `nvidia-smi --query-gpu=index,memory.used,memory.free --format=csv,noheader,nounits` printed on an
    # idle NVIDIA H200 (143771 MiB) lent to this project, 2026-12-01
    assert parse_nvidia_smi("0, 0, 143156\n") == {"gpu0_used_gib": 0.0, "gpu0_free_gib": 143156 / 1024}


def test_nvidia_smi_query_lines_become_per_gpu_readings():
    # `nvidia-smi --query-gpu=index,memory.used,memory.free --format=csv,noheader,nounits` on a 2-GPU box
    text = "0, 130516, 12555\n1, 512, [N/A]\n"
    assert parse_nvidia_smi(text) == {"gpu0_used_gib": 130516 / 1024, "gpu0_free_gib": 12555 / 1024}


def test_worst_is_the_most_used_and_the_least_free():
    readings = [
        {"engine_rss_gib": 2.0, "host_available_gib": 10.0, "gpu0_free_gib": 3.0},
        {"engine_rss_gib": 3.5, "host_available_gib": 8.0, "gpu0_free_gib": 0.5},
        {"engine_rss_gib": 3.0, "host_available_gib": 9.0},
    ]
    assert worst(readings) == {"engine_rss_gib": 3.5, "host_available_gib": 8.0, "gpu0_free_gib": 0.5}


def test_host_available_reads_this_box():
    assert 0 < host_available()["host_available_gib"] < 4096


def test_process_tree_rss_sums_a_real_group_and_the_watch_keeps_its_peak(tmp_path):
    """A child that allocates 200 MB after saying so on stdout: the watch must see at least that much."""
    code = "import sys,time\nb=bytearray(200*1024*1024)\nprint('ready',flush=True)\nsys.stdin.read()"
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert process.stdout.readline().strip() == b"ready"
        with MemoryWatch([process_tree_rss(process.pid), host_available], interval=0.05) as watch:
            pass
        peak = watch.peak()
        assert peak["engine_rss_gib"] >= 0.19
        assert peak["host_available_gib"] > 0
    finally:
        process.stdin.close()
        stop(Server(process, tmp_path / "none.log", "", "", 0.0))
