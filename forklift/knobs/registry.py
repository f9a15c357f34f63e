"""The environment-knob registry of an engine source tree, read with `ast` (never by importing the engine).

Registered knobs are the keys of the registry dict (vLLM: `environment_variables`
in vllm/envs.py). A *bypass read* is a bare `os.environ.get("VLLM_X")`,
`os.getenv(...)`, `os.environ["VLLM_X"]` or `"VLLM_X" in os.environ` anywhere
else: vLLM validates and hashes only registered knobs into its compile-cache
key, so a knob read this way can change behaviour without invalidating the cache.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from forklift.engines import EngineAdapter
from forklift.errors import ForkliftError
from forklift.fsio import walk_files

_MAY_READ = re.compile(rb"environ|getenv")
_CODE = {
    "os.environ.get": 'os.environ.get("{name}")',
    "os.getenv": 'os.getenv("{name}")',
    "os.environ[]": 'os.environ["{name}"]',
    "in os.environ": '"{name}" in os.environ',
}


@dataclass(frozen=True)
class Read:
    """One bare read of an engine variable outside the registry."""

    name: str
    path: str  # relative to the tree root, '/'-separated
    line: int
    how: str  # os.environ.get, os.getenv, os.environ[], in os.environ
    registered: bool

    def __str__(self) -> str:
        state = "registered" if self.registered else "unregistered"
        return f"{self.path}:{self.line}: {_CODE[self.how].format(name=self.name)} ({state})"


@dataclass(frozen=True)
class Registry:
    root: Path
    names: tuple[str, ...]  # sorted registered knob names
    bypass: tuple[Read, ...]  # every bare read outside the registry file, in path/line order

    @property
    def unregistered(self) -> tuple[Read, ...]:
        """Bare reads of names the registry does not know."""
        return tuple(r for r in self.bypass if not r.registered)


@dataclass(frozen=True)
class RegistryDiff:
    added: tuple[str, ...]
    removed: tuple[str, ...]
    introduced: tuple[Read, ...]  # bare reads present after, not before (matched by path, name, how)

    @property
    def introduced_unregistered(self) -> tuple[Read, ...]:
        return tuple(r for r in self.introduced if not r.registered)


def registry(tree: Path, adapter: EngineAdapter, reads: bool = True) -> Registry:
    """Registered names and bypass reads of the source tree at `tree` (the folder holding `vllm/`).

    `tree` may be a source tree or a site-packages folder; reads=False skips the scan for bare reads.
    """
    registry_path = tree / adapter.registry_file
    try:
        source = registry_path.read_bytes()
    except FileNotFoundError:
        raise ForkliftError(
            f"{registry_path}: no knob registry file (is {tree} a {adapter.name} source tree?)"
        ) from None
    names = registered_names(parse_module(source, registry_path), adapter.registry_dict)
    if not names:
        raise ForkliftError(f"{registry_path}: no `{adapter.registry_dict}` dict found")
    package = tree / adapter.package
    found: list[Read] = []
    for path in sorted(p for p in walk_files(package) if p.suffix == ".py") if reads else ():
        if path == registry_path:
            continue
        data = path.read_bytes()
        if not may_read(data, adapter):
            continue
        rel = path.relative_to(tree).as_posix()
        for name, line, how in bare_reads(parse_module(data, path), adapter.env_prefix):
            found.append(Read(name, rel, line, how, name in names))
    return Registry(tree, tuple(sorted(names)), tuple(found))


def may_read(source: bytes, adapter: EngineAdapter) -> bool:
    """Cheap text test before parsing: only a module naming the prefix and the environment can read it."""
    return adapter.env_prefix.encode() in source and _MAY_READ.search(source) is not None


def parse_module(source: bytes, path: Path | str, note: str = "") -> ast.Module:
    """The module's AST; a syntax error is one line naming the file (note: e.g. " after the series")."""
    try:
        return ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise ForkliftError(f"{path}:{exc.lineno}: not valid Python{note}: {exc.msg}") from None
    except (RecursionError, MemoryError):  # Python's own parser gives up on code nested this deep
        raise ForkliftError(f"{path}: nested too deeply for Python's parser{note}") from None


def registered_names(module: ast.Module, dict_name: str) -> set[str]:
    """String keys of the module-level `dict_name = {...}` plus `dict_name["X"] = ...` additions."""
    names: set[str] = set()
    for node in module.body:
        targets: list[ast.expr] = []
        value = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            if isinstance(target, ast.Name) and target.id == dict_name and isinstance(value, ast.Dict):
                names.update(k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
            elif (
                isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Name)
                and target.value.id == dict_name
                and isinstance(target.slice, ast.Constant)
                and isinstance(target.slice.value, str)
            ):
                names.add(target.slice.value)
    return names


def _is_environ(node: ast.expr) -> bool:
    """`os.environ` or a bare `environ` (from os import environ)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ" and isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and node.id == "environ"


def _literal(node: ast.expr | None, prefix: str) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(prefix):
        return node.value
    return None


def bare_reads(module: ast.Module, prefix: str) -> list[tuple[str, int, str]]:
    """(name, line, how) for every read of a `prefix` variable straight from the process environment."""
    found: list[tuple[str, int, str]] = []
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = _literal(node.args[0], prefix)
            if name is None:
                continue
            if isinstance(func, ast.Attribute) and func.attr == "get" and _is_environ(func.value):
                found.append((name, node.lineno, "os.environ.get"))
            elif (
                isinstance(func, ast.Attribute)
                and func.attr == "getenv"
                and isinstance(func.value, ast.Name)
                and func.value.id == "os"
            ) or (isinstance(func, ast.Name) and func.id == "getenv"):
                found.append((name, node.lineno, "os.getenv"))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environ(node.value):
            name = _literal(node.slice, prefix)
            if name:
                found.append((name, node.lineno, "os.environ[]"))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            name = _literal(node.left, prefix)
            if name and _is_environ(node.comparators[0]):
                found.append((name, node.lineno, "in os.environ"))
    return sorted(found, key=lambda r: (r[1], r[0]))


def compare(before: Registry, after: Registry) -> RegistryDiff:
    """Names added/removed, and bare reads the change introduced (line numbers may move; counts may not)."""
    old, new = set(before.names), set(after.names)
    seen = Counter((r.path, r.name, r.how) for r in before.bypass)
    introduced = []
    for read in after.bypass:
        key = (read.path, read.name, read.how)
        if seen[key]:
            seen[key] -= 1
        else:
            introduced.append(read)
    return RegistryDiff(tuple(sorted(new - old)), tuple(sorted(old - new)), tuple(introduced))
