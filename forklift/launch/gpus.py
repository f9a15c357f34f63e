"""The GPUs of a machine: memory and processes before boot and after stop; clocks, power and throttling per run.

After a stop every GPU of the profile must be idle: no process of the stopped engine's group on it and
memory back to within IDLE_SLACK_MIB of what it held before the boot. A box without nvidia-smi (the CPU
test box) skips the check and says so; the result lands in the boot receipt (BootBody.after_stop).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from forklift.errors import ForkliftError

IDLE_SLACK_MIB = 256  # the driver's own bookkeeping moves by a few MiB; a leaked engine holds GiBs
NO_SMI = "skipped: no nvidia-smi on this machine"


def _smi(*query: str) -> list[list[str]]:
    out = subprocess.run(
        ["nvidia-smi", *query, "--format=csv,noheader,nounits"], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    return [[part.strip() for part in line.split(",")] for line in out.splitlines() if line.strip()]


def memory_used() -> dict[int, int] | None:
    """GPU index -> memory used (MiB); None where there is no nvidia-smi."""
    if not shutil.which("nvidia-smi"):
        return None
    return {int(i): int(m) for i, m in _smi("--query-gpu=index,memory.used")}


def processes() -> dict[int, list[tuple[int, int]]]:
    """GPU index -> [(pid, MiB)] of the compute processes on it."""
    index = {bus: int(i) for i, bus in _smi("--query-gpu=index,pci.bus_id")}
    found: dict[int, list[tuple[int, int]]] = {}
    for pid, bus, mib in _smi("--query-compute-apps=pid,gpu_bus_id,used_memory"):
        found.setdefault(index.get(bus, -1), []).append((int(pid), int(mib)))
    return found


def idle_verdict(
    gpus: list[int],
    before: dict[int, int],
    after: dict[int, int],
    procs: dict[int, list[tuple[int, int]]],
    ours: set[int],
) -> str:
    """One line saying every GPU of the profile is idle, or a ForkliftError naming the GPU left busy."""
    for gpu in gpus:
        left = [(pid, mib) for pid, mib in procs.get(gpu, []) if pid in ours]
        if left:
            pid, mib = left[0]
            raise ForkliftError(f"gpu {gpu}: engine process {pid} still holds {mib:,} MiB after stop")
        if after.get(gpu, 0) - before.get(gpu, 0) > IDLE_SLACK_MIB:
            raise ForkliftError(
                f"gpu {gpu}: {after[gpu]:,} MiB used after stop, {before.get(gpu, 0):,} MiB before the boot"
            )
    figures = ", ".join(f"{g}: {after.get(g, 0):,} MiB (before {before.get(g, 0):,})" for g in gpus)
    return f"idle: no engine process left, memory back to the pre-boot figure ({figures})"


# NVML's clock throttle (clock event) reason bits, named as nvidia-smi -q names them; idle is not a slowdown.
THROTTLE_BITS = {
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
SMI_STATE = "index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw"
# the reasons' field was renamed (clock "events" since driver 535); one the driver does not know fails the query
SMI_REASONS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
_REASONS_FIELD: list[str | None] = [None]


@dataclass(frozen=True)
class GpuReading:
    """One reading of one GPU: what moves a GPU-bound step's time."""

    index: int
    name: str
    sm_clock_mhz: float | None
    memory_clock_mhz: float | None
    temperature_c: float | None
    power_w: float | None
    throttle: int | None  # NVML's reason bitmask
    source: str  # "nvml" or "nvidia-smi"


def throttle_names(mask: int | None) -> list[str]:
    return [name for bit, name in THROTTLE_BITS.items() if mask and mask & bit]


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:  # "[N/A]", "[Not Supported]"
        return None


def _nvml_readings() -> list[GpuReading] | None:
    try:
        import pynvml  # type: ignore[import-not-found]  # nvidia-ml-py, when the machine has it
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        out = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = pynvml.nvmlDeviceGetName(handle)
            reasons = (
                getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
            )
            out.append(
                GpuReading(
                    index=index,
                    name=name.decode() if isinstance(name, bytes) else str(name),
                    sm_clock_mhz=float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
                    memory_clock_mhz=float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM)),
                    temperature_c=float(pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)),
                    power_w=pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
                    throttle=int(reasons(handle)),
                    source="nvml",
                )
            )
        return out
    except pynvml.NVMLError:
        return None
    finally:
        pynvml.nvmlShutdown()


def _smi_readings() -> list[GpuReading] | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        rows = _smi(f"--query-gpu={SMI_STATE}")
    except (subprocess.SubprocessError, OSError):
        return None
    masks: dict[int, int] = {}
    for field in SMI_REASONS if _REASONS_FIELD[0] is None else (_REASONS_FIELD[0],):
        try:
            masks = {int(i): int(m, 16) for i, m in _smi(f"--query-gpu=index,{field}")}
            _REASONS_FIELD[0] = field  # the one this driver knows: ask only it from now on
            break
        except (subprocess.SubprocessError, OSError, ValueError):
            continue
    out = []
    for row in rows:
        if len(row) != 6:
            continue
        index, name, sm, mem, temp, power = row
        gpu = int(index)
        out.append(
            GpuReading(
                gpu, name, _number(sm), _number(mem), _number(temp), _number(power), masks.get(gpu), "nvidia-smi"
            )
        )
    return out or None


def gpu_readings() -> list[GpuReading] | None:
    """Every GPU's clocks, temperature, power and throttle reasons now; None on a machine without one.

    NVML first (a library call, well under a millisecond); nvidia-smi where the Python binding is missing.
    """
    return _nvml_readings() or _smi_readings()
