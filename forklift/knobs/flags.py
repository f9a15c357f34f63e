"""The flags an engine's own parser knows, read from its `--help` text (captured once per engine version).

The help text is argparse's: option lines like
    --max-model-len MAX_MODEL_LEN      a flag taking a value
    --enforce-eager, --no-enforce-eager  a switch and its negation
    --dtype {auto,bfloat16,float16}    a value from a fixed set
    --hf-token [HF_TOKEN]              an optional value
so parsing it is engine-agnostic; only the command that prints it is the adapter's.
"""

from __future__ import annotations

import ast
import difflib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from forklift.engines import EngineAdapter
from forklift.errors import ForkliftError
from forklift.fsio import write_atomic

_OPTION_LINE = re.compile(r"^  (-{1,2}[A-Za-z0-9][^\s,]*(?:[ ,].*?)?)(?:\s{2,}\S.*)?$")
_INVOCATION = re.compile(r"^(--[A-Za-z0-9][\w.-]*)(?: (.+))?$")
_SPLIT = re.compile(r", (?=-)")


@dataclass(frozen=True)
class FlagSpec:
    name: str
    takes_value: bool
    optional_value: bool = False
    choices: tuple[str, ...] | None = None


@dataclass(frozen=True)
class EngineFlags:
    version: str
    flags: dict[str, FlagSpec]

    def closest(self, name: str) -> str:
        match = difflib.get_close_matches(name, list(self.flags), n=1)
        return f" (closest: {match[0]})" if match else ""


def _choices(metavar: str) -> tuple[str, ...] | None:
    if metavar.startswith("{") and metavar.endswith("}"):
        return tuple(metavar[1:-1].split(","))
    if metavar.startswith("[") and metavar.endswith("]") and "'" in metavar:
        try:
            return tuple(str(v) for v in ast.literal_eval(metavar))
        except (ValueError, SyntaxError):
            return None
    return None


def parse_help(text: str) -> dict[str, FlagSpec]:
    flags: dict[str, FlagSpec] = {}
    for line in text.splitlines():
        match = _OPTION_LINE.match(line)
        if not match:
            continue
        for invocation in _SPLIT.split(match.group(1).strip()):
            found = _INVOCATION.match(invocation.strip())
            if not found:
                continue  # short options (-O, -sc) are not used by profiles
            name, metavar = found.group(1), found.group(2)
            if metavar is None:
                flags[name] = FlagSpec(name, takes_value=False)
            elif metavar.startswith("[") and "'" not in metavar:
                flags[name] = FlagSpec(name, takes_value=True, optional_value=True)
            else:
                # "{a,b} or name registered in --x": a fixed set plus plugins, so no closed choice list.
                closed = " or " not in metavar
                flags[name] = FlagSpec(name, takes_value=True, choices=_choices(metavar) if closed else None)
    return flags


def engine_version(python: str, adapter: EngineAdapter) -> str:
    """The installed engine's version from package metadata (no engine import)."""
    code = (
        "import importlib.metadata as m,sys\np=sys.argv[1]\n"
        "try: print(m.version(p))\n"
        "except m.PackageNotFoundError: print(m.version(m.packages_distributions()[p][0]))"
    )
    result = subprocess.run([python, "-c", code, adapter.package], capture_output=True, text=True)
    if result.returncode != 0 or not result.stdout.strip():
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise ForkliftError(f"{python}: cannot read the installed {adapter.package} version: {last}")
    return result.stdout.strip()


HELP_TIMEOUT_S = 300.0  # a cold engine import takes ~10 s; minutes mean it is stuck


def capture_flags(python: str, adapter: EngineAdapter, cache_root: Path | None = None) -> EngineFlags:
    """The engine's flags, from its own help text; cached per engine version (help takes ~10 s)."""

    version = engine_version(python, adapter)
    if cache_root is None:
        # local: forklift.source pulls pydantic and packaging; only the default-cache path needs it
        from forklift.source.cache import default_cache

        cache_root = default_cache().root
    cached = cache_root / "engine-help" / f"{adapter.name}-{version}.txt"
    if cached.is_file():
        text = cached.read_text(encoding="utf-8")
    else:
        argv = adapter.help_argv(python)
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=HELP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ForkliftError(
                f"{adapter.name} {version}: `{' '.join(argv)}` printed no help within {HELP_TIMEOUT_S:g} s"
            ) from None
        if result.returncode != 0:
            last = (result.stderr.strip().splitlines() or ["no output"])[-1]
            raise ForkliftError(f"{' '.join(argv)}: exited {result.returncode}: {last}")
        text = result.stdout
        write_atomic(cached, text)
    flags = parse_help(text)
    if not flags:
        raise ForkliftError(f"{cached}: no flags found in the engine's help text")
    return EngineFlags(version, flags)
