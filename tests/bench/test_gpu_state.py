"""GPU state per run: readings summed up per GPU (median clocks, hottest reading, every throttle reason)."""

import asyncio
import os

from forklift.bench.gpu import GpuSampler, summarize
from forklift.launch.gpus import GpuReading, gpu_readings, throttle_names


def reading(index: int, sm: float, temp: float, throttle: int) -> GpuReading:
    return GpuReading(index, "NVIDIA H200", sm, 3201.0, temp, 650.0, throttle, "nvml")


def test_summary_per_gpu():
    states = summarize(
        [reading(0, 1980, 60, 0x1), reading(0, 1755, 71, 0x4), reading(0, 1980, 65, 0), reading(1, 1980, 50, 0)]
    )
    assert states is not None and [s.index for s in states] == [0, 1]
    first = states[0]
    assert (first.samples, first.sm_clock_mhz, first.sm_clock_min_mhz, first.temperature_c) == (3, 1980, 1755, 71)
    assert first.throttle_reasons == ["sw_power_cap"]  # idle (0x1) is not a slowdown


def test_throttle_bits_by_name():
    assert throttle_names(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert throttle_names(None) == [] and throttle_names(0x1) == []


def test_a_machine_without_a_gpu_records_none():
    """This box has no GPU: no reading, and a run's `gpus` is None (never zeros)."""
    if gpu_readings() is not None:
        return  # a GPU host: the summary test above holds the arithmetic

    async def run() -> GpuSampler:
        async with GpuSampler(every_s=0.01) as sampler:
            await asyncio.sleep(0.05)
        return sampler

    assert asyncio.run(run()).states() is None


FAKE_SMI = """#!/bin/sh
# A stand-in for nvidia-smi on a machine without a GPU (the output format of driver 580's --query-gpu).
case "$1" in
  --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw)
    echo "0, NVIDIA H200, 1980, 3201, 41, 123.45"; echo "1, NVIDIA H200, [N/A], 3201, 39, 99.00" ;;
  --query-gpu=index,clocks_event_reasons.active) echo "Field not valid" >&2; exit 2 ;;
  --query-gpu=index,clocks_throttle_reasons.active) echo "0, 0x0000000000000004"; echo "1, 0x0000000000000001" ;;
  *) exit 2 ;;
esac
"""


def test_nvidia_smi_readings_when_nvml_is_missing(tmp_path, monkeypatch):
    """No GPU here: a fake nvidia-smi prints what the real one does, so the parse and the field fallback are held."""
    from forklift.launch import gpus

    smi = tmp_path / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    found = gpus._smi_readings()
    assert found is not None and [r.index for r in found] == [0, 1]
    assert (found[0].sm_clock_mhz, found[0].power_w, found[0].throttle) == (1980.0, 123.45, 0x4)
    assert found[1].sm_clock_mhz is None and throttle_names(found[1].throttle) == []
