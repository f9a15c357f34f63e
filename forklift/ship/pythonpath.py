"""Which site folder the image's own Python imports the engine from, read from the final tree, never run.

The interpreter is the first `python3` (then `python`) on the PATH the image's config sets. Its import
path is what CPython's getpath and site modules build: PYTHONPATH first, then the user site (outside a
venv), then a venv's site folder when a pyvenv.cfg sits beside or above the interpreter (and the base's,
when it includes system site packages), else the prefix's: Debian's dist-packages when the image has
them, else `lib64` and `lib` site-packages. Not modelled: code run at start (`.pth` import lines,
sitecustomize), which can change sys.path further.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass

from forklift.errors import ForkliftError
from forklift.ship.rootfs import Node, NotFound, RootFS

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # what runtimes set when Env has none
INTERPRETERS = ("python3", "python")
SITE_FOLDERS = ("site-packages", "dist-packages")
_VERSION = re.compile(r"python(\d+\.\d+)$")


@dataclass(frozen=True)
class EngineSite:
    site: str  # the sys.path entry holding the engine, canonical, no leading slash
    interpreter: str | None  # the python that imports it from there; None when the image has none


def engine_site(tree: RootFS, env: list[str], read_cfg: Callable[[Node], bytes | None], package: str) -> EngineSite:
    variables = dict(item.partition("=")[::2] for item in env)
    interpreter = _interpreter(tree, variables.get("PATH", DEFAULT_PATH))
    installed = _installed(tree, package)
    if interpreter is None:
        if len(installed) != 1:
            where = ", ".join(f"/{s}" for s in installed[:10]) or f"no */site-packages/{package}/__init__.py"
            raise ForkliftError(
                f"{tree.label}: no python on the image's PATH, and {len(installed)} {package} installs: {where}"
            )
        return EngineSite(installed[0], None)
    for entry in _sys_path(tree, interpreter, variables, read_cfg):
        try:
            if tree.find(f"{entry}/{package}/__init__.py").node.kind == "file":
                return EngineSite(tree.find(entry).path, "/" + interpreter)
        except NotFound:
            continue
    elsewhere = f"; it is installed in {', '.join('/' + s for s in installed[:10])}" if installed else ""
    raise ForkliftError(f"{tree.label}: /{interpreter} would not import {package} (not on its path){elsewhere}")


def _interpreter(tree: RootFS, path: str) -> str | None:
    for name in INTERPRETERS:
        for folder in path.split(":"):
            if not folder.startswith("/"):
                continue  # relative to wherever the command runs: not a place to prove
            candidate = posixpath.join(folder, name).lstrip("/")
            try:
                if tree.find(candidate).node.kind == "file":
                    return candidate
            except NotFound:
                continue
    return None


def _sys_path(
    tree: RootFS, invoked: str, variables: dict[str, str], read_cfg: Callable[[Node], bytes | None]
) -> list[str]:
    entries = [p for p in variables.get("PYTHONPATH", "").split(":") if p.startswith("/")]
    real = tree.find(invoked).path
    prefix = posixpath.dirname(posixpath.dirname(real))
    version = _version(tree, real, prefix)
    if version is None:
        return entries
    lib = f"python{version}"
    folder = tree.find(posixpath.dirname(invoked)).path
    venv = next((v for v in (folder, posixpath.dirname(folder)) if _cfg(tree, v, read_cfg) is not None), None)
    if venv is not None:
        cfg = _cfg(tree, venv, read_cfg) or {}
        entries += [f"{venv}/lib64/{lib}/site-packages", f"{venv}/lib/{lib}/site-packages"]
        if cfg.get("include-system-site-packages", "false").lower() == "true":
            entries += _prefix_sites(tree, posixpath.dirname(cfg.get("home", "/usr/bin").strip("/")), lib)
        return entries
    if not variables.get("PYTHONNOUSERSITE"):
        entries.append(f"{variables.get('HOME', '/root')}/.local/lib/{lib}/site-packages")
    return entries + _prefix_sites(tree, prefix, lib)


def _prefix_sites(tree: RootFS, prefix: str, lib: str) -> list[str]:
    try:
        debian = tree.find(f"{prefix}/lib/python3/dist-packages").node.kind == "folder"
    except NotFound:
        debian = False
    if debian:
        return [
            f"{prefix}/local/lib/{lib}/dist-packages",
            f"{prefix}/lib/python3/dist-packages",
            f"{prefix}/lib/{lib}/dist-packages",
        ]
    return [f"{prefix}/lib64/{lib}/site-packages", f"{prefix}/lib/{lib}/site-packages"]


def _version(tree: RootFS, real: str, prefix: str) -> str | None:
    if match := _VERSION.search(posixpath.basename(real)):
        return match.group(1)
    try:
        names = tree.find(f"{prefix}/lib").node.children
    except NotFound:
        return None
    found = sorted(match.group(1) for name in names if (match := _VERSION.fullmatch(name)))
    return found[0] if len(found) == 1 else None


def _cfg(tree: RootFS, folder: str, read_cfg: Callable[[Node], bytes | None]) -> dict[str, str] | None:
    try:
        node = tree.find(f"{folder}/pyvenv.cfg").node
    except NotFound:
        return None
    text = (read_cfg(node) or b"").decode("utf-8", "replace")
    return {k.strip().lower(): v.strip() for k, _, v in (line.partition("=") for line in text.splitlines())}


def _installed(tree: RootFS, package: str) -> list[str]:
    """Every site folder holding `package`/__init__.py, walking the tree without following links."""
    found = []
    stack = [("", tree.root)]
    while stack:
        path, node = stack.pop()
        for name, child in node.children.items():
            if child.kind != "folder":
                continue
            full = f"{path}/{name}".lstrip("/")
            if name in SITE_FOLDERS:
                try:
                    if tree.find(f"{full}/{package}/__init__.py").node.kind == "file":
                        found.append(full)
                except NotFound:
                    pass
            stack.append((full, child))
    return sorted(found)
