"""Checks before a boot: the port is free, the engine imports, the CUDA build suits the driver."""

from __future__ import annotations

import functools
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

from forklift.engines import EngineAdapter
from forklift.errors import ForkliftError
from forklift.installed.package import script_python
from forklift.launch.resolve import Resolved

NVIDIA_PROC = Path("/proc/driver/nvidia/version")


def port_free(host: str, port: int) -> None:
    """Bind as the server will (SO_REUSEADDR, as uvicorn does): a listener is busy; the last boot's TIME_WAIT is not."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise ForkliftError(
                f"port {port} on {host} is not free ({exc.strerror}): stop what listens there or pick --port"
            ) from None


def engine_python(resolved: Resolved, adapter: EngineAdapter) -> str | None:
    """The interpreter that runs the engine: the profile's, else the one behind the console script."""
    if resolved.python:
        return resolved.python
    if resolved.command[0] != adapter.serve_script:
        return None  # a custom command: forklift cannot tell which interpreter it runs
    found = shutil.which(adapter.serve_script)
    python = script_python(Path(found)) if found else None
    return str(python) if python else None


# Exit 3: no such package. Else prints 1 when its __init__ imports from cached bytecode, or Python can cache it.
IMPORT_PROBE = """import importlib.util, os, sys
spec = importlib.util.find_spec(sys.argv[1])
if spec is None:
    sys.exit(3)
cached = importlib.util.cache_from_source(spec.origin) if (spec.origin or "").endswith(".py") else ""
folder = os.path.dirname(cached)
while folder and not os.path.exists(folder):
    folder = os.path.dirname(folder)
print(int(not cached or os.path.exists(cached) or (not sys.dont_write_bytecode and os.access(folder, os.W_OK))))
"""


def engine_importable(python: str, adapter: EngineAdapter, env: dict[str, str]) -> list[str]:
    """Refuse an interpreter that cannot import the engine (in the engine's environment); warn when each boot
    must compile the engine's Python again."""
    try:
        result = subprocess.run(
            [python, "-c", IMPORT_PROBE, adapter.package],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **env},
        )
    except OSError as exc:
        raise ForkliftError(f"engine python {python}: cannot run it ({exc.strerror})") from None
    if result.returncode != 0:
        raise ForkliftError(f"engine python {python}: cannot import {adapter.package!r}: install the engine there")
    if result.stdout.strip() == "0":
        return [
            f"engine python {python}: {adapter.package} has no cached bytecode and none can be written "
            "(PYTHONDONTWRITEBYTECODE, -B or a read-only folder): every boot compiles its Python again, "
            "which can double the engine's start"
        ]
    return []


def cuda_mismatch(torch_cuda: str | None, driver_cuda: str | None) -> str | None:
    """Why a CUDA build of the engine cannot run on this driver, or None (also when either is unknown)."""
    if not torch_cuda or not driver_cuda:
        return None
    built = tuple(int(x) for x in torch_cuda.split(".")[:2])
    supported = tuple(int(x) for x in driver_cuda.split(".")[:2])
    if built > supported:
        return f"the engine's torch is built for CUDA {torch_cuda}, the driver supports up to CUDA {driver_cuda}"
    return None


@functools.cache
def cuda_check(python: str) -> None:
    """Only where a GPU driver exists: compare torch's CUDA build with what nvidia-smi says the driver runs.

    Once per interpreter and forklift process (a failure is not remembered): importing torch takes seconds,
    and a campaign boots the same interpreter a dozen times."""
    if not NVIDIA_PROC.exists() or not shutil.which("nvidia-smi"):
        return
    torch_cuda = subprocess.run(
        [python, "-c", "import torch;print(torch.version.cuda or '')"], capture_output=True, text=True, timeout=120
    ).stdout.strip()
    smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=60).stdout
    found = re.search(r"CUDA Version:\s*([\d.]+)", smi)
    problem = cuda_mismatch(torch_cuda or None, found.group(1) if found else None)
    if problem:
        raise ForkliftError(problem)


def preflight(resolved: Resolved, adapter: EngineAdapter) -> tuple[str | None, list[str]]:
    """Refuse a boot that cannot work; returns the engine's python when known, and warnings about it."""
    port_free(resolved.host, resolved.port)
    python = engine_python(resolved, adapter)
    if python is None and resolved.command[0] == adapter.serve_script:
        raise ForkliftError(
            f"no {adapter.serve_script!r} on PATH: install the engine or set python = ... in the profile"
        )
    if python is None:
        return None, []
    warnings = engine_importable(python, adapter, resolved.env)
    cuda_check(python)
    return python, warnings
