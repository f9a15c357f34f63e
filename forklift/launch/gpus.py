"""The GPUs of a profile before boot and after stop: memory used and processes, read from nvidia-smi.

After a stop every GPU of the profile must be idle: no process of the stopped engine's group on it and
memory back to within IDLE_SLACK_MIB of what it held before the boot. A box without nvidia-smi (the CPU
test box) skips the check and says so; the result lands in the boot receipt (BootBody.after_stop).
"""

from __future__ import annotations

import shutil
import subprocess

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
