"""Memory while a burst runs, from whatever this box has: the engine's process tree, the host, the GPUs.

A sampler is a plain function returning named readings in GiB; `samplers_for` picks those this
box supports (CPU: the engine process group's RSS from /proc and the host's MemAvailable; NVIDIA
GPUs: NVML when pynvml imports, else `nvidia-smi --query-gpu`), and `MemoryWatch` samples them on
a thread while the burst runs and keeps each reading's worst: the highest use, the least free.
RSS summed over the group counts pages shared between processes once per process: an upper bound.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from forklift.launch.supervise import group_members

Sampler = Callable[[], dict[str, float]]
GIB = float(1 << 30)
LOWER_IS_WORSE = ("_available_gib", "_free_gib")  # every other reading: higher is worse
NVIDIA_SMI_QUERY = ["nvidia-smi", "--query-gpu=index,memory.used,memory.free", "--format=csv,noheader,nounits"]


def _status_kib(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass  # the process ended between the listing and the read
    return 0


def process_tree_rss(pgid: int) -> Sampler:
    """The engine's process group (API server, engine core, workers): summed resident memory."""

    def sample() -> dict[str, float]:
        return {"engine_rss_gib": sum(_status_kib(pid, "VmRSS") for pid in group_members(pgid)) * 1024 / GIB}

    return sample


def host_available(meminfo: Path = Path("/proc/meminfo")) -> dict[str, float]:
    """What the kernel says new allocations can still get (MemAvailable)."""
    for line in meminfo.read_text(encoding="utf-8").splitlines():
        if line.startswith("MemAvailable:"):
            return {"host_available_gib": int(line.split()[1]) * 1024 / GIB}
    return {}


def parse_nvidia_smi(text: str) -> dict[str, float]:
    """`index, used MiB, free MiB` lines of `nvidia-smi --query-gpu` into gpuN_used_gib / gpuN_free_gib."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            continue  # "[N/A]" on a GPU that does not report memory
        index, used, free = parts
        out[f"gpu{index}_used_gib"] = int(used) / 1024
        out[f"gpu{index}_free_gib"] = int(free) / 1024
    return out


def nvidia_smi() -> dict[str, float]:
    result = subprocess.run(NVIDIA_SMI_QUERY, capture_output=True, text=True, timeout=30, check=False)
    return parse_nvidia_smi(result.stdout) if result.returncode == 0 else {}


def nvml_sampler() -> Sampler | None:
    """NVML through pynvml when it is installed (no subprocess per sample), else None."""
    try:
        import pynvml  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    except pynvml.NVMLError:  # no driver here: fall back to nvidia-smi or nothing
        return None

    def sample() -> dict[str, float]:
        out = {}
        for index, handle in enumerate(handles):
            info = pynvml.nvmlDeviceGetMemoryInfo(handle)
            out[f"gpu{index}_used_gib"] = info.used / GIB
            out[f"gpu{index}_free_gib"] = info.free / GIB
        return out

    return sample


def samplers_for(pgid: int) -> list[Sampler]:
    """Every sampler this box supports, for the engine whose process group is `pgid`."""
    found: list[Sampler] = [process_tree_rss(pgid), host_available]
    gpu = nvml_sampler()
    if gpu is None and shutil.which("nvidia-smi"):
        gpu = nvidia_smi
    if gpu is not None:
        found.append(gpu)
    return found


def worst(readings: list[dict[str, float]]) -> dict[str, float]:
    """Per reading name, the worst value seen: the least of what is free, the most of what is used."""
    out: dict[str, float] = {}
    for reading in readings:
        for key, value in reading.items():
            pick = min if key.endswith(LOWER_IS_WORSE) else max
            out[key] = round(pick(out.get(key, value), value), 3)
    return out


class MemoryWatch:
    """Sample on a thread from enter to exit (once at each edge too, so a short burst still has readings)."""

    def __init__(self, samplers: list[Sampler], interval: float = 0.25) -> None:
        self.samplers = samplers
        self.interval = interval
        self.readings: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="forklift-memory", daemon=True)

    def _sample(self) -> None:
        for sampler in self.samplers:
            with contextlib.suppress(OSError, subprocess.SubprocessError, ValueError):  # a missed reading is absent
                self.readings.append(sampler())

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> MemoryWatch:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def peak(self) -> dict[str, float]:
        return worst(self.readings)
