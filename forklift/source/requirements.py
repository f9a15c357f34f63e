"""The engine's own requirements in a pristine tree, and what changed between two pins.

A release pins its companions (torch, FlashInfer, Triton, xgrammar...) in its metadata: `Requires-Dist`
of an sdist's PKG-INFO or a wheel's METADATA. A tree without metadata (a git checkout) lists them in
requirement files the engine adapter names (`-r` followed). A change to a companion that keys a kernel
or compile cache means a cold first boot; the adapter names those.
"""

from __future__ import annotations

import email.parser
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from pydantic import BaseModel

from forklift.engines import EngineAdapter
from forklift.errors import ForkliftError
from forklift.fsio import read_bounded

MAX_METADATA_BYTES = 4 << 20  # vLLM's PKG-INFO is ~20 KB, its README included
MAX_REQUIREMENTS = 5000
MAX_FILES = 32  # requirement files read through `-r`, in all


class EngineRequirements(BaseModel):
    """`source`: where they were read (PKG-INFO, a METADATA, requirement files); `pins`: 'name[; marker]' ->
    the specifier ('' for any version)."""

    source: str
    pins: dict[str, str]


class RequirementChange(BaseModel):
    name: str  # 'name' or 'name; marker'
    old: str | None  # the specifier, None when absent from that pin
    new: str | None
    cache: str = ""  # what the change makes cold, for a kernel-bearing companion

    def describe(self) -> str:
        """'torch ==2.13.0 → ==2.14.0: what gets rebuilt', the marker after the change ('(when ...)')."""
        name, _, marker = self.name.partition("; ")
        old, new = (("any version" if s == "" else s) for s in (self.old, self.new))
        change = f"added {new}" if old is None else f"removed (was {old})" if new is None else f"{old} → {new}"
        return f"{name} {change}" + (f" (when {marker})" if marker else "") + (f": {self.cache}" if self.cache else "")


def read_requirements(tree: Path, adapter: EngineAdapter | None) -> EngineRequirements | None:
    """The requirements a pristine tree declares, or None when it declares none forklift can read."""
    metadata = [tree / "PKG-INFO", *sorted(tree.glob("*.dist-info/METADATA"))]
    for path in metadata:
        if path.is_symlink():
            raise ForkliftError(f"{path}: package metadata is a symlink; refusing to follow it")
        if path.exists():  # a folder or a FIFO of that name is refused by the bounded read, never skipped
            return EngineRequirements(source=path.relative_to(tree).as_posix(), pins=_from_metadata(path))
    for name in adapter.requirement_files if adapter else ():
        if (tree / name).is_file():
            return EngineRequirements(source=name, pins=_from_files(tree, name))
    return None


def _from_metadata(path: Path) -> dict[str, str]:
    text = read_bounded(path, "package metadata", MAX_METADATA_BYTES).decode("utf-8", "replace")
    headers = email.parser.Parser().parsestr(text, headersonly=True)
    return _pins(headers.get_all("Requires-Dist") or [], path)


def _from_files(tree: Path, first: str) -> dict[str, str]:
    """Requirement lines of `first` and the files it includes with `-r` (relative to the including file)."""
    lines: list[str] = []
    todo, seen = [first], set[Path]()
    root = tree.resolve()
    while todo:
        name = todo.pop(0)
        path = (tree / name).resolve()
        if path in seen:
            continue
        if root not in path.parents:
            raise ForkliftError(f"{tree / first}: includes {name}, outside the tree")
        if len(seen) >= MAX_FILES:
            raise ForkliftError(f"{tree / first}: includes more than {MAX_FILES} requirement files")
        seen.add(path)
        for raw in read_bounded(path, "requirement file", MAX_METADATA_BYTES).decode("utf-8", "replace").splitlines():
            line = raw.split(" #", 1)[0].strip()
            if line.startswith(("-r ", "--requirement ")):
                todo.append(str(Path(name).parent / line.split(None, 1)[1].strip()))
            elif line and not line.startswith(("#", "-")):
                lines.append(line)
    return _pins(lines, tree / first)


def _pins(lines: list[str], where: Path) -> dict[str, str]:
    if len(lines) > MAX_REQUIREMENTS:
        raise ForkliftError(f"{where}: more than {MAX_REQUIREMENTS} requirements")
    pins: dict[str, str] = {}
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue  # a URL or an option line: nothing a version can be compared on
        extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
        key = canonicalize_name(req.name) + extras + (f"; {req.marker}" if req.marker else "")
        pins[key] = str(req.specifier)
    return pins


def requirement_changes(
    old: EngineRequirements, new: EngineRequirements, adapter: EngineAdapter | None
) -> list[RequirementChange]:
    """Every requirement added, removed or re-specified, kernel-bearing companions first."""
    caches = adapter.kernel_caches if adapter else {}
    changes = []
    for key in sorted(old.pins.keys() | new.pins.keys()):
        before, after = old.pins.get(key), new.pins.get(key)
        if before != after:
            package = key.split(";")[0].split("[")[0]
            changes.append(RequirementChange(name=key, old=before, new=after, cache=caches.get(package, "")))
    return sorted(changes, key=lambda c: not c.cache)
