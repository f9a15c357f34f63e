"""What forklift knows of an engine: its log lines, knobs, CLI and metrics, as one value (EngineAdapter)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class FactPattern:
    """A log line that reports boot facts.

    `source` and `format` name the engine source file and the exact format string
    that prints the line, so a test can check the pattern against the pinned
    release's own source (a reworded line breaks a test, not a benchmark).
    `facts` maps a regex group to (BootFacts field, converter).
    """

    regex: re.Pattern[str]
    facts: dict[str, tuple[str, Callable[[str], object]]]
    source: str
    format: str


@dataclass(frozen=True)
class FatalPattern:
    """A line that means the boot failed; lower rank = closer to the root cause."""

    regex: re.Pattern[str]
    rank: int
    source: str | None = None
    format: str | None = None


@dataclass(frozen=True)
class ScanPattern:
    """A line a healthy server never logs: `canary logscan` counts each in the server's log."""

    name: str
    regex: re.Pattern[str]


@dataclass(frozen=True)
class EngineAdapter:
    name: str
    package: str  # the importable top-level package
    env_prefix: str
    registry_file: str  # relative to the source tree root
    registry_dict: str  # the module-level dict that registers every knob
    serve_module: str  # `python -m <serve_module> serve ...`
    serve_script: str  # the console script used when no engine python is given
    health_path: str
    fact_patterns: tuple[FactPattern, ...]
    fatal_patterns: tuple[FatalPattern, ...]
    unknown_env_regex: re.Pattern[str]
    dying_regex: re.Pattern[str]  # a line after which the engine will not become healthy
    log_prefix: re.Pattern[str]  # process/level/time/location prefix stripped from reported lines
    # "(Worker_TP1 pid=74488) ...": which process (rank, engine core) wrote a line; groups tag and pid
    process_tag: re.Pattern[str] | None = None
    # the line that maps a process to its ranks; groups rank, world, dp, pp, tp
    rank_line: re.Pattern[str] | None = None
    metrics: dict[str, str] = field(default_factory=dict)  # role -> Prometheus metric name
    forced_env: dict[str, str] = field(default_factory=dict)  # set in every launch; a profile may not change it
    # flags whose product is the number of GPUs a launch uses (tensor x pipeline x data parallel)
    parallel_flags: tuple[str, ...] = ()
    deprecated_env: dict[str, str] = field(default_factory=dict)  # variable -> the flag that supersedes it
    # Variables naming the engine's compile caches: a cold boot points each at a fresh empty folder.
    cache_env: tuple[str, ...] = ()
    scan_patterns: tuple[ScanPattern, ...] = ()  # what `canary logscan` counts
    serving_image: str = ""  # the engine's own serving image, "{version}" filled in (`forklift image --print`)
    scan_until: re.Pattern[str] | None = None  # a deliberate stop begins: what follows is teardown, not faults
    # Where a tree without package metadata (a git checkout) lists the engine's requirements (`-r` followed).
    requirement_files: tuple[str, ...] = ()
    # Requirements whose version keys a kernel or compile cache: package -> what a change makes cold.
    kernel_caches: dict[str, str] = field(default_factory=dict)

    def serve_argv(self, python: str | None) -> list[str]:
        """The command that starts the server, before the model and flags."""
        if python:
            return [python, "-m", self.serve_module, "serve"]
        return [self.serve_script, "serve"]

    def help_argv(self, python: str) -> list[str]:
        return [python, "-m", self.serve_module, "serve", "--help=all"]
