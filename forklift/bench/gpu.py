"""GPU state over a run: sampled while its requests are in flight, summed up per GPU for the receipt.

Readings run in a worker thread (NVML is a library call, nvidia-smi a process) so the client's
event loop never waits on them; on a machine without a GPU nothing is sampled and the run's
`gpus` stays None.
"""

from __future__ import annotations

import asyncio
import statistics
from collections import defaultdict

from forklift.bench.schema import GpuState
from forklift.launch.gpus import GpuReading, gpu_readings, throttle_names

GPU_SAMPLE_S = 0.5


class GpuSampler:
    """`async with GpuSampler() as s: ...run...`, then `s.states()`."""

    def __init__(self, every_s: float = GPU_SAMPLE_S):
        self.every_s = every_s
        self.readings: list[GpuReading] = []
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def __aenter__(self) -> GpuSampler:
        first = await asyncio.to_thread(gpu_readings)
        if first is not None:
            self.readings.extend(first)
            self._task = asyncio.create_task(self._loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task

    async def _loop(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._stop.wait(), self.every_s)
                return
            except asyncio.TimeoutError:  # not the builtin TimeoutError before 3.11
                pass
            found = await asyncio.to_thread(gpu_readings)
            if found:
                self.readings.extend(found)

    def states(self) -> list[GpuState] | None:
        return summarize(self.readings)


def summarize(readings: list[GpuReading]) -> list[GpuState] | None:
    """Per GPU: median clocks and power, the highest temperature, every throttle reason seen."""
    if not readings:
        return None
    by_gpu: dict[int, list[GpuReading]] = defaultdict(list)
    for reading in readings:
        by_gpu[reading.index].append(reading)

    def median(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return statistics.median(present) if present else None

    out = []
    for index, seen in sorted(by_gpu.items()):
        sm = [r.sm_clock_mhz for r in seen if r.sm_clock_mhz is not None]
        temps = [r.temperature_c for r in seen if r.temperature_c is not None]
        reasons = sorted({name for r in seen for name in throttle_names(r.throttle)})
        out.append(
            GpuState(
                index=index,
                name=seen[0].name,
                samples=len(seen),
                sm_clock_mhz=median(list(sm)),
                sm_clock_min_mhz=min(sm) if sm else None,
                memory_clock_mhz=median([r.memory_clock_mhz for r in seen]),
                temperature_c=max(temps) if temps else None,
                power_w=median([r.power_w for r in seen]),
                throttle_reasons=reasons,
                source="nvml" if seen[0].source == "nvml" else "nvidia-smi",
            )
        )
    return out
