"""GPU state per run: readings summed up per GPU (median clocks, hottest reading, every throttle reason)."""

import asyncio

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
