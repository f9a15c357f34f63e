"""The root filesystem an image's runtime would see, as a tree of metadata built from its layers in order.

Each layer member is applied as runtimes apply it (moby's and containerd's layer unpacking): the folders
on its path are resolved the way the kernel resolves them, through symlinks (an absolute target is read
from the image's root, `..` stops at it), missing ones made; a member replaces what was at its name unless
both are folders; a hard link takes the data of the file it names; `.wh.NAME` removes NAME; an opaque
whiteout (`.wh..wh..opq`) removes from its folder everything the lower layers put there, keeping what
this layer puts there. No file data is held: a file is (layer, member index), read later for the few
files that are proven. Every walk is a loop over an explicit stack; a symlink chain stops at the
kernel's 40 hops.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from forklift.errors import ForkliftError
from forklift.source.limits import MAX_DEPTH, MAX_SYMLINK_HOPS, UnsafeMember, clean_member
from forklift.source.tarstream import Member

OPAQUE = ".wh..wh..opq"
WHITEOUT = ".wh."
MAX_ENTRIES = 1_000_000  # entries made over all layers: a serving image has a few hundred thousand; ~200 B each


class Node:
    __slots__ = ("children", "kind", "layer", "member", "mode", "purged", "target")

    def __init__(self, kind: str, layer: int, member: int = -1, mode: int = 0o755, target: str = "") -> None:
        self.kind, self.layer, self.member, self.mode, self.target = kind, layer, member, mode, target
        self.children: dict[str, Node] = {}
        self.purged = -1  # the layer whose opaque whiteout already emptied this folder of lower entries


class NotFound(Exception):
    pass


@dataclass(frozen=True)
class Found:
    path: str  # canonical, from the root, no leading slash ("" is the root)
    node: Node


class RootFS:
    """The final tree of an image; `apply` each member of each layer, bottom layer first."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.root = Node("folder", 0)
        self.made = 0

    def apply(self, layer: int, index: int, member: Member, rel: str, where: str) -> None:
        """Member `index` of layer `layer` (numbered from 1), named `rel` (cleaned); `where` names the layer."""
        parent_path, _, leaf = rel.rpartition("/")
        if leaf == OPAQUE:
            self._purge(self._folder(parent_path, layer, member, where), layer)
            return
        if leaf.startswith(WHITEOUT):
            try:
                folder = self.find(parent_path)
            except NotFound:
                return
            if folder.node.kind == "folder":
                folder.node.children.pop(leaf[len(WHITEOUT) :], None)
            return
        parent = self._folder(parent_path, layer, member, where)
        existing = parent.children.get(leaf)
        if member.kind == "folder":
            if existing is not None and existing.kind == "folder":
                existing.layer, existing.mode = layer, member.mode
                return
            node = Node("folder", layer, mode=member.mode)
        elif member.kind == "file":
            node = Node("file", layer, index, member.mode)
        elif member.kind == "symlink":
            node = Node("symlink", layer, target=member.linkname)
        elif member.kind == "hardlink":
            node = self._link_target(clean_member(member.linkname, where, member.name), member, where)
        else:
            node = Node("other", layer)  # a device or fifo: part of many images, never of an engine
        self._count(where)
        parent.children[leaf] = node

    def find(self, path: str, follow_last: bool = True) -> Found:
        """`path` resolved as the kernel resolves it inside the image (NotFound when it is not there)."""
        names, node = self._walk(path, follow_last, None, "")
        return Found("/".join(names), node)

    def walk_files(self, top: str, limit: int) -> Iterator[tuple[str, Node]]:
        """(path under `top`, node) of every file below folder `top`, symlinks followed as Python's import
        would follow them; over `limit` entries or MAX_DEPTH folders deep (a symlink loop) is refused."""
        stack: list[tuple[str, str]] = [("", top)]  # (path under top, canonical path)
        seen = 0
        while stack:
            rel, path = stack.pop()
            if rel.count("/") >= MAX_DEPTH:
                raise ForkliftError(f"{self.label}: {top}/{rel} is over {MAX_DEPTH} folders deep (a symlink loop?)")
            for name, child in sorted(self.find(path).node.children.items()):
                seen += 1
                if seen > limit:
                    raise ForkliftError(f"{self.label}: over {limit} entries under /{top}")
                sub, full = f"{rel}/{name}".lstrip("/"), f"{path}/{name}"
                if child.kind == "symlink":
                    try:
                        resolved = self.find(full)
                    except NotFound:
                        continue  # a dangling link imports nothing
                    child, full = resolved.node, resolved.path
                if child.kind == "folder":
                    stack.append((sub, full))
                else:
                    yield sub, child

    def _folder(self, path: str, layer: int, member: Member, where: str) -> Node:
        names, node = self._walk(path, True, layer, where)
        if node.kind != "folder":
            raise UnsafeMember(f"unsafe {where}: member {member.name!r} is written through /{'/'.join(names)}, a file")
        return node

    def _link_target(self, target: str, member: Member, where: str) -> Node:
        try:
            found = self.find(target, follow_last=False)
        except NotFound:
            found = None
        if found is None or found.node.kind != "file":
            raise UnsafeMember(
                f"unsafe {where}: member {member.name!r} is a hard link to {target!r}, which is not a file before it"
            )
        node = found.node
        return Node("file", node.layer, node.member, node.mode)

    def _walk(self, path: str, follow_last: bool, create: int | None, where: str) -> tuple[list[str], Node]:
        """Resolve `path` one component at a time; with `create` (a layer), missing folders are made."""
        stack: list[tuple[str, Node]] = []
        pending = [p for p in reversed(path.split("/")) if p not in ("", ".")]
        hops = 0
        while pending:
            part = pending.pop()
            if part == "..":
                if stack:
                    stack.pop()
                continue
            folder = stack[-1][1] if stack else self.root
            if folder.kind != "folder":
                if create is None:
                    raise NotFound(path)
                return [name for name, _ in stack], folder
            child = folder.children.get(part)
            if child is None:
                if create is None:
                    raise NotFound(path)
                self._count(where)
                child = folder.children[part] = Node("folder", create)
            if child.kind == "symlink" and (pending or follow_last):
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    if create is None:
                        raise NotFound(path)
                    raise UnsafeMember(f"unsafe {where}: over {MAX_SYMLINK_HOPS} symlinks on the way to {path!r}")
                if child.target.startswith("/"):
                    stack.clear()
                pending.extend(p for p in reversed(child.target.split("/")) if p not in ("", "."))
                continue
            stack.append((part, child))
        return [name for name, _ in stack], stack[-1][1] if stack else self.root

    def _purge(self, folder: Node, layer: int) -> None:
        """An opaque whiteout: lower layers' entries under `folder` go; each folder is emptied once per layer."""
        stack = [folder]
        while stack:
            node = stack.pop()
            if node.purged == layer:
                continue
            node.purged = layer
            node.children = {name: child for name, child in node.children.items() if child.layer == layer}
            stack.extend(child for child in node.children.values() if child.kind == "folder")

    def _count(self, where: str) -> None:
        self.made += 1
        if self.made > MAX_ENTRIES:
            raise UnsafeMember(f"unsafe {where}: the image makes over {MAX_ENTRIES} entries")
