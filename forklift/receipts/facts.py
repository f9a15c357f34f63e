"""What a new receipt is stamped with, needing no schema: this machine's facts, a fresh id, the time
as the receipt's JSON writes it, and the file name they give.

Kept apart from the envelope's pydantic model so that a replayed check (series/resultcache.py) can
stamp a receipt without importing pydantic.
"""

from __future__ import annotations

import os
import platform
import socket
import uuid
from datetime import datetime
from typing import Any

import forklift


def new_id() -> str:
    return uuid.uuid4().hex[:12]


def json_time(moment: datetime) -> str:
    """A UTC time as pydantic writes it in JSON: ISO 8601, microseconds only when not zero, `Z`."""
    return moment.isoformat().replace("+00:00", "Z")


def receipt_name(created: datetime, kind: str, receipt_id: str) -> str:
    return f"{created:%Y%m%dT%H%M%S}-{kind}-{receipt_id}.json"


def machine_facts() -> dict[str, Any]:
    """The fields of a receipt's fingerprint, read from this machine now."""
    return {
        "hostname": socket.gethostname(),
        "machine_id": _machine_id(),
        "os": f"{platform.system()} {platform.release()}",
        "arch": platform.machine(),
        "cpu": _cpu_name(),
        "cpu_count": os.cpu_count() or 0,
        "memory_bytes": _memory_bytes(),
        "gpus": _gpus(),
        "python": platform.python_version(),
        "forklift": forklift.__version__,
    }


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _machine_id() -> str:
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            with open(path, encoding="utf-8") as fh:
                value = fh.read().strip()
                if value:
                    return value
        except OSError:
            continue
    return socket.gethostname()


def kernel_boot_id() -> str | None:
    """This boot of the machine (Linux's random boot id): new after every reboot, and on every fresh box."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="utf-8") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def _gpus() -> list[str]:
    """GPU names from the NVIDIA driver's proc files; no GPU library is imported for this."""
    root = "/proc/driver/nvidia/gpus"
    names = []
    try:
        for bus in sorted(os.listdir(root)):
            with open(os.path.join(root, bus, "information"), encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith("Model:"):
                        names.append(line.split(":", 1)[1].strip())
    except OSError:
        pass
    return names
