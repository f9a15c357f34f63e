"""A memory-bounded cgroup around the engine: the kernel's own limit, and its own count of what reached it.

forklift's samplers read RSS and MemAvailable; a hardware gate that must fail closed needs the kernel's
word instead (was memory.high or memory.max reached, did the OOM killer act, what was the peak). The
engine enters a fresh cgroup between fork and exec, so every worker it forks is inside from its first
byte. Cgroup v2 where the unified tree has the memory controller, else the v1 memory hierarchy; v1 has
no memory.high (asking for it is refused, never quietly dropped), and its swap limit is memory+swap
(memory.memsw), so swap_max needs max there.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from forklift.config.profile import MemoryLimits
from forklift.errors import ForkliftError
from forklift.launch.schema import CgroupMemory

Version = Literal[1, 2]
DRAIN_S = 10.0  # after the process group is gone: how long a stray member may take to die


@dataclass(frozen=True)
class Hierarchy:
    """Where this process's memory cgroup lives: the folder forklift makes its groups in."""

    version: Version
    parent: Path  # this process's own cgroup
    top: Path | None = None  # the hierarchy's mount point: no folder above it is a cgroup


def find_hierarchy(proc_cgroup: str, mountinfo: str) -> Hierarchy:
    """The memory cgroup of this process from /proc/self/cgroup and /proc/self/mountinfo (texts, so the
    choice is a function of what the kernel says): v2 if its tree has the memory controller, else v1."""
    paths: dict[str, str] = {}  # controller ("" for v2) -> path
    for line in proc_cgroup.splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    mounts: dict[str, tuple[str, Path]] = {}  # "" for cgroup2, else "memory" -> (mount root, mount point)
    for line in mountinfo.splitlines():
        fields = line.split(" - ", 1)
        head, tail = fields[0].split(), fields[1].split() if len(fields) == 2 else []
        if len(tail) < 3 or len(head) < 5:
            continue
        if tail[0] == "cgroup2":
            mounts[""] = (head[3], Path(head[4]))
        elif tail[0] == "cgroup" and "memory" in tail[2].split(","):
            mounts["memory"] = (head[3], Path(head[4]))
    for key, version in (("", 2), ("memory", 1)):
        if key in mounts and key in paths:
            root, point = mounts[key]
            relative = os.path.relpath(paths[key], root) if paths[key].startswith(root) else paths[key]
            folder = (point / relative.lstrip("/")).resolve() if relative != "." else point
            if version == 2 and "memory" not in _read(folder / "cgroup.controllers", "").split():
                continue  # a unified tree without the memory controller (it is bound to v1)
            return Hierarchy(version, folder, point)  # type: ignore[arg-type]
    raise ForkliftError(
        "no memory cgroup to run the engine in: neither a cgroup v2 tree with the memory controller nor a v1 memory hierarchy is mounted"
    )


def _read(path: Path, default: str | None = None) -> str:
    try:
        return path.read_text(encoding="ascii")
    except OSError:
        if default is None:
            raise
        return default


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value, encoding="ascii")
    except OSError as exc:
        raise ForkliftError(f"cannot set {path} to {value}: {exc.strerror}") from None


def _settings(version: Version, limits: MemoryLimits) -> list[tuple[str, int]]:
    """(file, bytes) to write, in an order the kernel accepts; a limit the version lacks is refused."""
    if version == 2:
        pairs = [("memory.high", limits.high), ("memory.max", limits.max), ("memory.swap.max", limits.swap_max)]
        return [(name, int(value)) for name, value in pairs if value is not None]
    if limits.high is not None:
        raise ForkliftError(
            "memory.high needs cgroup v2, and this host's memory controller is on cgroup v1: set max instead"
        )
    assert limits.max is not None  # MemoryLimits holds high or max
    settings = [("memory.limit_in_bytes", int(limits.max))]
    if limits.swap_max is not None:  # v1 bounds memory+swap together
        settings.append(("memory.memsw.limit_in_bytes", int(limits.max) + int(limits.swap_max)))
    return settings


@dataclass
class MemoryCgroup:
    """A cgroup made for one engine: enter it in the child, read it while it runs, remove it after stop."""

    path: Path
    version: Version
    limits: MemoryLimits
    last: CgroupMemory | None = field(default=None)  # the reading taken when it was removed

    def enter(self) -> Callable[[], None]:
        """A preexec_fn: the child writes itself (pid 0 = the writer) into cgroup.procs before exec."""
        procs = os.fsencode(self.path / "cgroup.procs")

        def join() -> None:  # runs in the forked child: only system calls, no Python objects shared
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

        return join

    def members(self) -> list[int]:
        text = _read(self.path / "cgroup.procs", "")
        return [int(pid) for pid in text.split()]

    def reading(self) -> CgroupMemory:
        """What the kernel counted so far (a fresh group starts at zero, so these are the engine's own)."""
        if self.last is not None:
            return self.last
        if self.version == 2:
            events = parse_keyed(_read(self.path / "memory.events", ""))
            peak = _read(self.path / "memory.peak", "").strip()
            return CgroupMemory(
                cgroup=str(self.path),
                version=2,
                high_bytes=_size(self.limits.high),
                max_bytes=_size(self.limits.max),
                swap_max_bytes=_size(self.limits.swap_max),
                peak_bytes=int(peak) if peak.isdigit() else None,
                high_events=events.get("high"),
                max_events=events.get("max"),
                oom_events=events.get("oom"),
                oom_kills=events.get("oom_kill"),
            )
        oom = parse_keyed(_read(self.path / "memory.oom_control", ""))
        peak = _read(self.path / "memory.max_usage_in_bytes", "").strip()
        return CgroupMemory(
            cgroup=str(self.path),
            version=1,
            max_bytes=_size(self.limits.max),
            swap_max_bytes=_size(self.limits.swap_max),
            peak_bytes=int(peak) if peak.isdigit() else None,
            oom_kills=oom.get("oom_kill"),
        )

    def remove(self) -> CgroupMemory:
        """Read it a last time, kill what is still inside (a worker that left the process group), rmdir."""
        if self.last is not None:
            return self.last
        final = self.reading()
        deadline = time.monotonic() + DRAIN_S
        while self.members() and time.monotonic() < deadline:
            for pid in self.members():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        while True:
            try:
                self.path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError as exc:  # EBUSY while the kernel finishes tearing the last member down
                if time.monotonic() >= deadline:
                    raise ForkliftError(f"cannot remove the engine's cgroup {self.path}: {exc.strerror}") from None
                time.sleep(0.1)
        self.last = final
        return final


def _size(value: int | None) -> int | None:
    return None if value is None else int(value)


def parse_keyed(text: str) -> dict[str, int]:
    """A cgroup flat-keyed file ("key value" a line: memory.events, memory.oom_control)."""
    pairs = (line.split() for line in text.splitlines())
    return {pair[0]: int(pair[1]) for pair in pairs if len(pair) == 2 and pair[1].isdigit()}


def v2_home(hierarchy: Hierarchy) -> Path:
    """Where a v2 memory cgroup can be made: the nearest cgroup, this process's own or above it, whose children get
    the memory controller (its cgroup.subtree_control lists memory).

    v2 gives no controller to the children of a cgroup that holds processes (EBUSY, seen on an H100 host where
    forklift ran in /process_api/<id>), so forklift's own cgroup usually cannot; the parent that gave it memory
    can, and the engine's cgroup is then forklift's sibling. Where no cgroup up to the mount point lists it, this
    one is asked to (the root cgroup, or an empty one, may)."""
    folder = hierarchy.parent
    while True:
        if "memory" in _read(folder / "cgroup.subtree_control", "").split():
            return folder
        if folder == hierarchy.top or folder.parent == folder or hierarchy.top is None:
            break
        folder = folder.parent
    control = hierarchy.parent / "cgroup.subtree_control"
    try:
        control.write_text("+memory", encoding="ascii")
    except OSError as exc:
        raise ForkliftError(
            f"cannot give memory cgroups to {hierarchy.parent}'s children ({exc.strerror}) and no cgroup above it "
            "does: start forklift in a cgroup whose parent enables memory for its children"
        ) from None
    return hierarchy.parent


def create(limits: MemoryLimits, name: str, hierarchy: Hierarchy | None = None) -> MemoryCgroup:
    """A fresh cgroup under this process's own memory cgroup, with the limits set; nothing is left on failure."""
    if hierarchy is None:
        hierarchy = find_hierarchy(_read(Path("/proc/self/cgroup")), _read(Path("/proc/self/mountinfo")))
    settings = _settings(hierarchy.version, limits)
    home = v2_home(hierarchy) if hierarchy.version == 2 else hierarchy.parent
    path = home / f"forklift-{name}-{os.getpid()}-{secrets.token_hex(3)}"
    try:
        path.mkdir()
    except OSError as exc:
        raise ForkliftError(f"cannot make a memory cgroup in {home}: {exc.strerror}") from None
    cgroup = MemoryCgroup(path, hierarchy.version, limits)
    try:
        for file, value in settings:
            if not (path / file).exists():
                raise ForkliftError(f"{path / file} does not exist: this kernel cannot enforce that limit")
            _write(path / file, str(value))
    except BaseException:
        cgroup.remove()
        raise
    return cgroup
