"""Preflight pieces that need no engine: the CUDA build against the driver, stop without a supervisor,
the interpreter behind the console script."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import replace

import pytest

from forklift.engines.vllm import VLLM
from forklift.errors import ForkliftError, UsageError
from forklift.installed.package import default_location
from forklift.knobs import flags
from forklift.launch.pidfiles import Running, listed, register, stop_running
from forklift.launch.preflight import (
    cuda_mismatch,
    cuda_toolchain,
    engine_python,
    jit_nvcc,
    nvcc_version,
    toolchain_mismatch,
)
from forklift.launch.resolve import Resolved
from forklift.launch.supervise import group_alive, start_time


def test_cuda_build_newer_than_the_driver_is_named():
    assert cuda_mismatch("12.8", "12.4") == (
        "the engine's torch is built for CUDA 12.8, the driver supports up to CUDA 12.4"
    )
    assert cuda_mismatch("12.4", "12.8") is None
    assert cuda_mismatch(None, "12.8") is None  # a CPU build: nothing to compare


def orphaned_engine() -> subprocess.Popen:
    """An engine whose supervisor was killed: its own process group, with a child of its own."""
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess,sys,time; subprocess.Popen([sys.executable,'-c','import time; time.sleep(600)']); time.sleep(600)",
        ],
        start_new_session=True,
    )


def gone_supervisor() -> tuple[int, int]:
    """(pid, start time) of a supervisor that no longer runs."""
    gone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    started = start_time(gone.pid)
    gone.kill()
    gone.wait()
    return gone.pid, started


def test_stop_kills_the_group_when_the_supervisor_is_gone(tmp_path, monkeypatch):
    monkeypatch.setenv("FORKLIFT_STATE_DIR", str(tmp_path))
    engine = orphaned_engine()
    supervisor, supervisor_started = gone_supervisor()
    entry = Running(
        "p", "http://127.0.0.1:1", 1, supervisor, engine.pid, "log", supervisor_started, start_time(engine.pid)
    )
    register(entry)
    try:
        assert listed() == [entry]
        stop_running(entry)
        engine.wait(timeout=120)  # a ceiling: the event is the group's exit
        assert not group_alive(engine.pid)
        assert listed() == []
    finally:
        if engine.poll() is None:
            engine.kill()


def test_a_reused_pid_is_never_signalled_and_its_entry_is_dropped(tmp_path, monkeypatch):
    """After a SIGKILLed launch or a reboot the recorded pids can name unrelated processes. The reuse is
    staged with a real process group whose start time differs from the recorded one (what a reused pid shows)."""
    monkeypatch.setenv("FORKLIFT_STATE_DIR", str(tmp_path))
    unrelated = orphaned_engine()
    supervisor, supervisor_started = gone_supervisor()
    entry = Running(
        "p",
        "http://127.0.0.1:1",
        1,
        supervisor,
        unrelated.pid,
        "log",
        supervisor_started,
        start_time(unrelated.pid) - 1,
    )
    register(entry)
    try:
        stop_running(entry)  # what a caller holding the stale entry would do
        assert unrelated.poll() is None and group_alive(unrelated.pid)
        register(entry)
        assert listed() == [] and not entry.path.exists()
        assert unrelated.poll() is None
    finally:
        os.killpg(unrelated.pid, signal.SIGKILL)
        unrelated.wait()


def test_an_entry_whose_processes_are_all_gone_is_dropped(tmp_path, monkeypatch):
    monkeypatch.setenv("FORKLIFT_STATE_DIR", str(tmp_path))
    supervisor, supervisor_started = gone_supervisor()
    engine, engine_started = gone_supervisor()
    entry = Running("p", "http://127.0.0.1:1", 1, supervisor, engine, "log", supervisor_started, engine_started)
    register(entry)
    assert listed() == [] and not entry.path.exists()


SCRIPTS = {
    "a plain shebang": "#!{python}\nimport sys\n",
    "/usr/bin/env": "#!/usr/bin/env python3\nimport sys\n",
    "pip's /bin/sh trampoline": "#!/bin/sh\n'''exec' \"{python}\" \"$0\" \"$@\"\n' '''\nimport sys\n",
}


@pytest.mark.parametrize("form", SCRIPTS)
def test_the_engine_python_is_read_from_every_console_script_form(tmp_path, monkeypatch, form):
    """Both callers (launch preflight and `forklift installed`) read the interpreter the same way."""
    # Spaces in the path are what make pip write the trampoline (a shebang cannot hold them).
    folder = tmp_path / ("a venv with spaces" if "trampoline" in form else "venv") / "bin"
    folder.mkdir(parents=True)
    python = folder / "python3"
    python.symlink_to(sys.executable)
    script = folder / "vllm"
    script.write_text(SCRIPTS[form].format(python=python))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))
    resolved = Resolved("p", {}, None, "m", "m", "127.0.0.1", 1, 1.0, ["vllm", "serve"], [], {})
    assert engine_python(resolved, VLLM) == str(python)
    assert default_location("vllm") == python


def test_a_shell_script_that_runs_no_python_is_not_taken_for_one(tmp_path, monkeypatch):
    script = tmp_path / "vllm"
    script.write_text('#!/bin/sh\nexec something-else "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    resolved = Resolved("p", {}, None, "m", "m", "127.0.0.1", 1, 1.0, ["vllm", "serve"], [], {})
    assert engine_python(resolved, VLLM) is None
    with pytest.raises(UsageError, match="not a Python console script"):
        default_location("vllm")


def test_an_engine_whose_help_hangs_is_named_not_a_traceback(tmp_path, monkeypatch):
    """A stand-in engine: a real installed distribution (pytest) for the version, and a serve module that hangs."""
    (tmp_path / "hanging_engine.py").write_text("import time\ntime.sleep(60)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(flags, "HELP_TIMEOUT_S", 1.0)
    engine = replace(VLLM, package="pytest", serve_module="hanging_engine")
    with pytest.raises(
        ForkliftError,
        match=rf"^vllm {pytest.__version__}: `.* -m hanging_engine serve --help=all` "
        r"printed no help within 1 s$",
    ):
        flags.capture_flags(sys.executable, engine, tmp_path / "cache")


def test_an_engine_that_must_compile_its_python_every_boot_is_warned_of(tmp_path, monkeypatch):
    """A real interpreter and a package folder named as the engine's: no cached bytecode and none writable
    (PYTHONDONTWRITEBYTECODE, as container images often set) warns; once compiled, or writable, it does not."""
    import compileall

    from forklift.launch.preflight import engine_importable

    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # set per case below, as a profile's env would

    package = tmp_path / "site" / VLLM.package
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 1\n")
    env = {"PYTHONPATH": str(tmp_path / "site"), "PYTHONDONTWRITEBYTECODE": "1"}
    (warning,) = engine_importable(sys.executable, VLLM, env)
    assert warning.startswith(f"engine python {sys.executable}: vllm has no cached bytecode and none can be written")
    assert engine_importable(sys.executable, VLLM, {"PYTHONPATH": env["PYTHONPATH"]}) == []  # it will cache
    assert compileall.compile_dir(package, quiet=1)
    assert engine_importable(sys.executable, VLLM, env) == []  # cached once: read from the cache
    with pytest.raises(ForkliftError, match="cannot import 'vllm': install the engine there"):
        engine_importable(sys.executable, VLLM, {"PYTHONPATH": str(tmp_path / "empty")})


def test_a_jit_toolchain_that_cannot_build_for_torchs_cuda_says_the_fix():
    old = toolchain_mismatch("/usr/bin/nvcc", "12.0", "PATH", "12.8", "/venv/site-packages/nvidia/cu12")
    assert old == (
        "nvcc 12.0 (/usr/bin/nvcc, from PATH) cannot build kernels for the engine's torch (CUDA 12.8): a JIT backend "
        "such as FlashInfer fails compiling; fix: set CUDA_HOME=/venv/site-packages/nvidia/cu12 in the profile's env"
    )
    other_major = toolchain_mismatch("/usr/local/bin/nvcc", "13.0", "CUDA_HOME", "12.8", None)
    assert other_major is not None and other_major.endswith(
        "fix: set CUDA_HOME to a CUDA 12.8 toolkit in the profile's env"
    )
    assert toolchain_mismatch("nvcc", "12.9", "PATH", "12.8", None) is None  # a newer minor builds for it
    assert toolchain_mismatch("nvcc", "13.0", "PATH", "13.0", None) is None


def torch_built_for(folder, cuda: str | None) -> dict[str, str]:
    """A stand-in for a CUDA build of torch (none installs on a CPU box): only torch/version.py, which the
    preflight reads instead of importing torch; put on the engine's PYTHONPATH."""
    (folder / "torch").mkdir(parents=True, exist_ok=True)
    (folder / "torch" / "__init__.py").write_text("")
    (folder / "torch" / "version.py").write_text(f"cuda: Optional[str] = {cuda!r}\n")
    return {"PYTHONPATH": str(folder)}


def test_the_boxs_real_nvcc_against_torchs_cuda(tmp_path):
    found = jit_nvcc(dict(os.environ))
    version = nvcc_version(found[0]) if found else None
    if version is None:  # a box without nvcc: nothing compiles kernels, nothing to say
        assert cuda_toolchain(sys.executable, torch_built_for(tmp_path, "12.8")) == []
        return
    other = f"{int(version.split('.')[0]) - 1}.8"  # a torch built for the major before the box's nvcc
    [warning] = cuda_toolchain(sys.executable, torch_built_for(tmp_path, other))
    assert warning.startswith(f"nvcc {version} ({found[0]}, from {found[1]}) cannot build kernels") and other in warning
    assert cuda_toolchain(sys.executable, {**torch_built_for(tmp_path / "same", version), "X": "1"}) == []
    nothing = tmp_path / "no-cuda"
    nothing.mkdir()  # CUDA_HOME naming a folder without nvcc: no toolchain, nothing said
    assert cuda_toolchain(sys.executable, {**torch_built_for(tmp_path, other), "CUDA_HOME": str(nothing)}) == []


@pytest.mark.engine
def test_the_cpu_engines_torch_has_no_cuda_so_nothing_is_said(engine_python):
    assert cuda_toolchain(str(engine_python), {}) == []
