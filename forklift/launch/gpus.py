"""The GPUs of a machine: memory and processes before boot and after stop; clocks, power and throttling per run.

After a stop every GPU of the profile must be idle: no process of the stopped engine's group on it,
memory back to within IDLE_SLACK_MIB of what it held before the boot, utilization back to 0 %, and no
Xid (the driver's GPU error report) in the kernel log since the boot where the log is readable. A box
without nvidia-smi (the CPU test box) skips the check and says so; the result lands in the boot receipt
(BootBody.after_stop).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from dataclasses import dataclass

from forklift.errors import ForkliftError

IDLE_SLACK_MIB = 256  # the driver's own bookkeeping moves by a few MiB; a leaked engine holds GiBs
NO_SMI = "skipped: no nvidia-smi on this machine"
UTIL_SETTLE_S = 10.0  # after a stop, how long the profile's GPUs may take to read 0 % utilization


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


def utilization() -> dict[int, int]:
    """GPU index -> utilization.gpu (%) over the driver's last sample period."""
    return {int(i): int(u) for i, u in _smi("--query-gpu=index,utilization.gpu") if u.isdigit()}


XID = re.compile(r"NVRM: Xid \(PCI:(?P<bus>[0-9a-fA-F:.]+)\): (?P<code>\d+)")


def kernel_xids() -> frozenset[str] | None:
    """The kernel log's Xid lines (with their timestamps, so each is one event); None where it is unreadable."""
    try:
        out = subprocess.run(["dmesg"], check=True, capture_output=True, text=True, errors="replace", timeout=30)
    except (subprocess.SubprocessError, OSError):
        return None
    return frozenset(line for line in out.stdout.splitlines() if XID.search(line))


def bus_key(bus: str) -> str:
    """A PCI address as bus:device, lower case: nvidia-smi's 00000000:3B:00.0 and the kernel's 0000:3b:00 agree."""
    parts = bus.lower().split(":")
    return ":".join(parts[-2:]).split(".")[0] if len(parts) >= 2 else bus.lower()


def bus_index() -> dict[str, int]:
    return {bus_key(bus): int(i) for i, bus in _smi("--query-gpu=index,pci.bus_id")}


@dataclass(frozen=True)
class GpuState:
    """What the idle check compares: before the boot and after the stop."""

    memory: dict[int, int]  # MiB used
    utilization: dict[int, int]  # %
    xids: frozenset[str] | None  # None: the kernel log is not readable here


def gpu_state() -> GpuState | None:
    """Every GPU now; None where there is no nvidia-smi."""
    used = memory_used()
    if used is None:
        return None
    return GpuState(used, utilization(), kernel_xids())


def settled_state(gpus: list[int], settle_s: float = UTIL_SETTLE_S) -> GpuState | None:
    """The GPUs after a stop: utilization read again until the profile's GPUs report 0 % or `settle_s` passes
    (the driver's figure covers its last sample period, up to a second, so the stop itself can show); memory and
    the kernel log's Xids read once, at the end."""
    if memory_used() is None:
        return None
    deadline = time.monotonic() + settle_s
    busy = utilization()
    while any(busy.get(g, 0) for g in gpus) and time.monotonic() < deadline:
        time.sleep(0.5)
        busy = utilization()
    return GpuState(memory_used() or {}, busy, kernel_xids())


def processes() -> dict[int, list[tuple[int, int]]]:
    """GPU index -> [(pid, MiB)] of the compute processes on it."""
    index = {bus: int(i) for i, bus in _smi("--query-gpu=index,pci.bus_id")}
    found: dict[int, list[tuple[int, int]]] = {}
    for pid, bus, mib in _smi("--query-compute-apps=pid,gpu_bus_id,used_memory"):
        found.setdefault(index.get(bus, -1), []).append((int(pid), int(mib)))
    return found


def idle_verdict(
    gpus: list[int],
    before: GpuState,
    after: GpuState,
    procs: dict[int, list[tuple[int, int]]],
    ours: set[int],
    buses: dict[str, int],
) -> str:
    """One line saying every GPU of the profile is idle, or a ForkliftError naming the GPU left busy or faulted."""
    for gpu in gpus:
        left = [(pid, mib) for pid, mib in procs.get(gpu, []) if pid in ours]
        if left:
            pid, mib = left[0]
            raise ForkliftError(f"gpu {gpu}: engine process {pid} still holds {mib:,} MiB after stop")
        used, was = after.memory.get(gpu, 0), before.memory.get(gpu, 0)
        if used - was > IDLE_SLACK_MIB:
            raise ForkliftError(f"gpu {gpu}: {used:,} MiB used after stop, {was:,} MiB before the boot")
        if after.utilization.get(gpu, 0) > 0:
            raise ForkliftError(f"gpu {gpu}: {after.utilization[gpu]}% utilized after stop (not back to idle)")
    if before.xids is not None and after.xids is not None:
        for line in sorted(after.xids - before.xids):
            found = XID.search(line)
            assert found is not None  # kernel_xids keeps only lines it matches
            index = buses.get(bus_key(found["bus"]))
            if index is None or index in gpus:
                name = f"gpu {index}" if index is not None else f"the GPU at PCI {found['bus']}"
                raise ForkliftError(f"{name}: Xid {found['code']} in the kernel log since the boot: {line.strip()}")
    figures = ", ".join(f"{g}: {after.memory.get(g, 0):,} MiB (before {before.memory.get(g, 0):,})" for g in gpus)
    xids = "no new Xid in the kernel log" if after.xids is not None else "kernel log not readable for Xids"
    return f"idle: no engine process left, memory back to the pre-boot figure ({figures}), utilization 0%, {xids}"


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
