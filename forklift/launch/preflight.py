"""Checks before a boot: the port is free, the engine imports, the CUDA build suits the driver and the JIT's nvcc."""

from __future__ import annotations

import functools
import json
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


# torch's CUDA build read from torch/version.py (importing torch takes seconds), and the CUDA toolchains pip
# installed beside it (nvidia-cuda-nvcc: nvidia/cu13/bin/nvcc, nvidia/cuda_nvcc/bin/nvcc).
TOOLCHAIN_PROBE = """import glob, importlib.util, json, os, re, sys
spec = importlib.util.find_spec("torch")
cuda = None
if spec is not None and spec.submodule_search_locations:
    try:
        with open(os.path.join(list(spec.submodule_search_locations)[0], "version.py")) as f:
            found = re.search(r"^cuda(?:: [^=]+)? = [\\x27\\x22]([0-9.]+)", f.read(1 << 16), re.M)
        cuda = found.group(1) if found else None
    except OSError:
        pass
sites = [p for p in sys.path if os.path.basename(p) == "site-packages"]
nvcc = sorted(n for s in sites for n in glob.glob(os.path.join(s, "nvidia", "*", "bin", "nvcc")))
print(json.dumps({"torch_cuda": cuda, "nvcc": nvcc[:8]}))
"""


def nvcc_version(nvcc: str) -> str | None:
    """'13.0' from `nvcc --version` ("release 13.0, V13.0.88"), or None when it does not run."""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"release (\d+\.\d+)", out)
    return found.group(1) if found else None


def jit_nvcc(env: dict[str, str]) -> tuple[str, str] | None:
    """The nvcc a JIT backend (FlashInfer, torch's cpp_extension) compiles with, and why that one:
    CUDA_HOME, then CUDA_PATH, then nvcc on PATH, then /usr/local/cuda, as torch looks for it."""
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(variable):
            return str(Path(env[variable]) / "bin" / "nvcc"), variable
    on_path = shutil.which("nvcc", path=env.get("PATH"))
    if on_path:
        return on_path, "PATH"
    default = Path("/usr/local/cuda/bin/nvcc")
    return (str(default), "torch's default /usr/local/cuda") if default.exists() else None


def toolchain_mismatch(nvcc: str, version: str, where: str, torch_cuda: str, fix_home: str | None) -> str | None:
    """Why kernels a JIT backend compiles with `nvcc` will not build for torch's CUDA, with the fix; or None.

    Another major version, or an older minor (nvcc 12.0 dies on the `--compress-mode` flag FlashInfer passes
    for CUDA 12.8), fails at the first kernel compiled, minutes into a boot."""
    have, want = (tuple(int(x) for x in v.split(".")[:2]) for v in (version, torch_cuda))
    if have[0] == want[0] and have >= want:
        return None
    fix = f"CUDA_HOME={fix_home}" if fix_home else f"CUDA_HOME to a CUDA {torch_cuda} toolkit"
    return (
        f"nvcc {version} ({nvcc}, from {where}) cannot build kernels for the engine's torch (CUDA {torch_cuda}): "
        f"a JIT backend such as FlashInfer fails compiling; fix: set {fix} in the profile's env"
    )


@functools.cache
def _toolchain(python: str, env_items: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    env = {**os.environ, **dict(env_items)}
    try:
        probe = subprocess.run([python, "-c", TOOLCHAIN_PROBE], capture_output=True, text=True, timeout=60, env=env)
        found = json.loads(probe.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return ()  # the import check above names an interpreter that does not run
    torch_cuda, beside = found.get("torch_cuda"), found.get("nvcc") or []
    chosen = jit_nvcc(env)
    if not isinstance(torch_cuda, str) or chosen is None or (version := nvcc_version(chosen[0])) is None:
        return ()  # a CPU build of torch, or no nvcc: nothing compiles CUDA kernels
    fix_home = next(
        (
            str(Path(n).parent.parent)
            for n in beside
            if (v := nvcc_version(n)) and v.split(".")[0] == torch_cuda.split(".")[0]
        ),
        None,
    )
    problem = toolchain_mismatch(chosen[0], version, chosen[1], torch_cuda, fix_home)
    return (problem,) if problem else ()


def cuda_toolchain(python: str, env: dict[str, str]) -> list[str]:
    """A warning when the CUDA toolchain a JIT backend will use does not match the engine's torch; once per
    interpreter and environment (a campaign boots the same one a dozen times)."""
    return list(_toolchain(python, tuple(sorted(env.items()))))


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
    return python, warnings + cuda_toolchain(python, resolved.env)
