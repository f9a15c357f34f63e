"""Read a container image offline and unpack the engine its own Python would import (`forklift verify --image`).

Two archive formats, as a folder or a tar of one: an OCI image layout (oci-layout, index.json,
blobs/sha256/...) and what `docker save` / `podman save` write (manifest.json, the config, one tar per
layer). No daemon and no registry. The final root filesystem is computed as a runtime computes it
(forklift.ship.rootfs: layers in order, whiteouts, opaque whiteouts, symlinks and hard links), each
layer bound to the config's diff_id (the sha256 of its uncompressed tar) as it is read; the engine is
the one the image's Python imports first (forklift.ship.pythonpath), and only its files (the package and
the dist-info folders beside it) are then written to a scratch folder, from a second read of the layers
that hold them.

Archives are untrusted: the outer tar goes through forklift.source.extract, layers through
forklift.source.tarstream (bounded headers, counts and sizes), every JSON file through a model
(forklift.ship.imagejson), every OCI blob is held to its digest.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from forklift.errors import ForkliftError, UsageError
from forklift.ship.imagejson import (
    MAX_DESCRIPTORS,
    MAX_NESTING,
    Descriptor,
    DockerManifest,
    ImageConfig,
    Index,
    Manifest,
    read_model,
)
from forklift.ship.pythonpath import engine_site
from forklift.ship.rootfs import Node, NotFound, RootFS
from forklift.source.extract import TreeWriter, extract_archive, resolves_inside
from forklift.source.hashing import file_sha256
from forklift.source.limits import Limits, UnsafeMember, clean_member
from forklift.source.tarstream import TarStream
from forklift.textsafe import terminal

INDEX_TYPES = ("application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json")
REF_NAME = "org.opencontainers.image.ref.name"
MAX_CFG_BYTES = 64 << 10  # a pyvenv.cfg is a few lines; kept from the first read of the layers
MAX_CFGS = 256
SHOWN = 10  # names listed in an error line


@dataclass(frozen=True)
class Layer:
    path: Path
    media_type: str
    diff_id: str  # sha256 of the uncompressed tar, from the image's config


@dataclass(frozen=True)
class Image:
    """One image of an archive: what its config says, and its layers bottom first."""

    format: str  # "oci" or "docker"
    image_id: str  # sha256:<digest of the config>, what podman and docker call the image ID
    labels: dict[str, str]
    layers: tuple[Layer, ...]
    env: tuple[str, ...] = ()


@dataclass(frozen=True)
class UnpackedEngine:
    image: Image
    site: Path  # the scratch site-packages holding the engine's files
    site_in_image: str  # where that folder is in the image, e.g. usr/lib/python3/dist-packages
    interpreter: str | None  # the image's python that imports the engine from there (None: the image has none)


@contextmanager
def unpacked_engine(archive: Path, package: str, tag: str | None = None) -> Iterator[UnpackedEngine]:
    """The engine of the image in `archive`, unpacked into a scratch folder that lives while the block runs."""
    limits = Limits.from_env()
    with tempfile.TemporaryDirectory(prefix="forklift-image-") as scratch:
        root = Path(scratch) / "archive"
        if archive.is_dir():
            root = archive
        elif archive.is_file():
            extract_archive(archive, root, strip_top=False, name=archive.name, limits=limits)
        else:
            raise UsageError(f"{archive}: no such file or folder")
        image = read_image(root, archive, tag)
        tree, cfgs = final_tree(image, limits, archive)
        found = engine_site(tree, list(image.env), lambda node: cfgs.get((node.layer, node.member)), package)
        site = Path(scratch) / "site"
        site.mkdir()
        _write_engine(image, tree, found.site, package, site, limits, archive)
        yield UnpackedEngine(image, site, found.site, found.interpreter)


def read_image(root: Path, archive: Path, tag: str | None) -> Image:
    """The image an OCI layout or a docker save folder holds (`tag` picks one of several, by its exact name)."""
    if (root / "index.json").is_file():
        return _oci_image(root, archive, tag)
    if (root / "manifest.json").is_file():
        return _docker_image(root, archive, tag)
    raise ForkliftError(
        f"{archive}: neither an OCI image layout (index.json) nor a docker save archive (manifest.json)"
    )


def _oci_image(root: Path, archive: Path, tag: str | None) -> Image:
    manifests = _oci_manifests(root, archive)
    if tag is not None:
        manifests = [(d, ref) for d, ref in manifests if ref == tag]
    if len(manifests) != 1:
        _not_one(archive, "the layout", tag, [ref or d.digest[:19] for d, ref in manifests])
    manifest = read_model(
        _blob(root, manifests[0][0], archive), Manifest, archive, f"manifest {manifests[0][0].digest}"
    )
    config_path = _blob(root, manifest.config, archive)
    config = read_model(config_path, ImageConfig, archive, f"config {manifest.config.digest}")
    diff_ids = _diff_ids(config, len(manifest.layers), archive)
    layers = tuple(
        Layer(_blob(root, d, archive), d.mediaType, diff_id)
        for d, diff_id in zip(manifest.layers, diff_ids, strict=True)
    )
    return _image("oci", config_path, config, layers)


def _oci_manifests(root: Path, archive: Path) -> list[tuple[Descriptor, str | None]]:
    """(descriptor, ref name) of every image manifest the index reaches, nested indexes followed in a loop:
    each index blob read once, at most MAX_DESCRIPTORS descriptors in all (an index DAG is not a tree)."""
    found: list[tuple[Descriptor, str | None]] = []
    pending: list[tuple[Path, str, str | None, int]] = [(root / "index.json", "index.json", None, 0)]
    read: set[str] = set()
    seen = 0
    while pending:
        path, what, outer_ref, depth = pending.pop()
        for descriptor in read_model(path, Index, archive, what).manifests:
            seen += 1
            if seen > MAX_DESCRIPTORS:
                raise ForkliftError(f"{archive}: the image indexes list over {MAX_DESCRIPTORS} descriptors")
            ref = (descriptor.annotations or {}).get(REF_NAME) or outer_ref
            if descriptor.mediaType not in INDEX_TYPES:
                found.append((descriptor, ref))
            elif descriptor.digest not in read:
                if depth + 1 > MAX_NESTING:
                    raise ForkliftError(f"{archive}: image indexes nested deeper than {MAX_NESTING}")
                read.add(descriptor.digest)
                pending.append((_blob(root, descriptor, archive), f"index {descriptor.digest}", ref, depth + 1))
    return found


def _docker_image(root: Path, archive: Path, tag: str | None) -> Image:
    entries = read_model(root / "manifest.json", DockerManifest, archive, "manifest.json").root
    if tag is not None:
        entries = [e for e in entries if tag in (e.RepoTags or [])]
    if len(entries) != 1:
        _not_one(archive, "manifest.json", tag, [t for e in entries for t in (e.RepoTags or ["(untagged)"])])
    entry = entries[0]
    config_path = _member(root, entry.Config, archive)
    config = read_model(config_path, ImageConfig, archive, f"config {entry.Config}")
    diff_ids = _diff_ids(config, len(entry.Layers), archive)
    layers = tuple(
        Layer(_member(root, p, archive), "", diff_id) for p, diff_id in zip(entry.Layers, diff_ids, strict=True)
    )
    return _image("docker", config_path, config, layers)


def _image(kind: str, config_path: Path, config: ImageConfig, layers: tuple[Layer, ...]) -> Image:
    inner = config.config
    labels = dict(inner.Labels or {}) if inner else {}
    env = tuple(inner.Env or ()) if inner else ()
    return Image(kind, "sha256:" + file_sha256(config_path), labels, layers, env)


def _diff_ids(config: ImageConfig, layers: int, archive: Path) -> list[str]:
    diff_ids = config.rootfs.diff_ids
    if len(diff_ids) != layers:
        raise ForkliftError(f"{archive}: the config lists {len(diff_ids)} diff_ids for {layers} layers")
    return diff_ids


def _not_one(archive: Path, where: str, tag: str | None, names: list[str]) -> None:
    shown = ", ".join(terminal(n[:80]) for n in names[:SHOWN]) or "none"
    more = f" (+{len(names) - SHOWN} more)" if len(names) > SHOWN else ""
    which = f"tagged {terminal(tag)!r}" if tag else "(pick one with --tag)"
    raise ForkliftError(f"{archive}: {len(names)} images {which} in {where}: {shown}{more}")


def final_tree(image: Image, limits: Limits, archive: Path) -> tuple[RootFS, dict[tuple[int, int], bytes]]:
    """The image's root filesystem, each layer held to its diff_id; and the pyvenv.cfg files' bytes."""
    tree = RootFS(str(archive))
    cfgs: dict[tuple[int, int], bytes] = {}
    for number, layer in enumerate(image.layers, 1):
        label = f"{archive} layer {number}"
        _refuse_zstd(layer, label)
        with open(layer.path, "rb") as handle:
            stream = TarStream(handle, label, limits.for_layers(), layer.path.stat().st_size)
            for index, member in enumerate(stream):
                rel = clean_member(member.name, label)
                if not rel:
                    continue
                tree.apply(number, index, member, rel, label)
                small = member.kind == "file" and member.size <= MAX_CFG_BYTES and len(cfgs) < MAX_CFGS
                if small and rel.endswith("pyvenv.cfg"):
                    cfgs[(number, index)] = stream.read(MAX_CFG_BYTES)
        _check_diff_id(stream, layer, label)
    return tree, cfgs


def _write_engine(
    image: Image, tree: RootFS, site: str, package: str, dest: Path, limits: Limits, archive: Path
) -> None:
    """The package folder and the dist-info folders of `site`, as the image's runtime would show them."""
    wanted: dict[int, dict[int, list[tuple[str, Node]]]] = defaultdict(lambda: defaultdict(list))
    for top in [package, *sorted(n for n in tree.find(site).node.children if n.endswith(".dist-info"))]:
        try:
            folder = tree.find(f"{site}/{top}")
        except NotFound:
            continue  # a dangling link: nothing Python would read
        if folder.node.kind != "folder":
            continue
        for rel, node in tree.walk_files(folder.path, limits.max_members):
            if node.kind != "file":
                raise UnsafeMember(f"unsafe {archive}: /{site}/{top}/{rel} is a device, fifo or other special file")
            wanted[node.layer][node.member].append((f"{top}/{rel}", node))
    writer = TreeWriter(dest, f"image {archive.name}", limits)
    try:
        for number, members in sorted(wanted.items()):
            layer = image.layers[number - 1]
            label = f"{archive} layer {number}"
            with open(layer.path, "rb") as handle:
                stream = TarStream(handle, label, limits.for_layers(), layer.path.stat().st_size)
                for index, member in enumerate(stream):
                    if not (places := members.get(index)):
                        continue
                    first, node = places[0]
                    writer.file(first, stream, member.name, executable=bool(node.mode & 0o100))
                    for other, _ in places[1:]:
                        writer.hardlink(other, first, member.name)
            _check_diff_id(stream, layer, label)  # the bytes written are the bytes bound to the config
    finally:
        writer.close()


def _check_diff_id(stream: TarStream, layer: Layer, label: str) -> None:
    if f"sha256:{stream.sha256}" != layer.diff_id:
        raise ForkliftError(
            f"{label}: its uncompressed sha256 is {stream.sha256}, the config's diff_id {layer.diff_id}"
        )


def _refuse_zstd(layer: Layer, label: str) -> None:
    if "zstd" in layer.media_type:
        raise ForkliftError(f"{label}: a zstd layer ({layer.media_type}); forklift reads tar and gzip layers only")


def _blob(root: Path, descriptor: Descriptor, archive: Path) -> Path:
    """The blob a descriptor names, held to its digest."""
    hexdigest = descriptor.digest.removeprefix("sha256:")
    path = root / "blobs" / "sha256" / hexdigest
    if not path.is_file() or path.is_symlink():
        raise ForkliftError(f"{archive}: blob {descriptor.digest} is missing")
    if (found := file_sha256(path)) != hexdigest:
        raise ForkliftError(f"{archive}: blob {descriptor.digest} holds bytes with sha256 {found}")
    return path


def _member(root: Path, name: str, archive: Path) -> Path:
    """A file a docker manifest.json names: inside the archive, a regular file."""
    rel = clean_member(name, f"archive {archive.name}")
    if not rel or not resolves_inside(root, rel) or not (root / rel).is_file():
        raise ForkliftError(
            f"{archive}: manifest.json names {terminal(name[:200])!r}, which is not a file in the archive"
        )
    return root / rel
