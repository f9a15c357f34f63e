"""Read a container image offline and unpack the engine installed in it (`forklift verify --image`).

Two archive formats, as a folder or a tar of one: an OCI image layout (oci-layout, index.json,
blobs/sha256/...) and what `docker save` / `podman save` write (manifest.json, the config, one tar per
layer). No daemon and no registry: the layers are read in order and applied as a container runtime
applies them, whiteouts (`.wh.NAME`) and opaque whiteouts (`.wh..wh..opq`) included, but only the
engine's own files are written: `<...>/site-packages/<package>/` and the dist-info folders beside it.

Archives are untrusted: the outer tar goes through forklift.source.extract, layer members are written
through its TreeWriter (no path outside, no device, no write through a link, size limits), every OCI
blob is held to its digest, and a docker layer to the config's diff_id.
"""

from __future__ import annotations

import json
import posixpath
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forklift.errors import ForkliftError, UsageError
from forklift.source.extract import TreeWriter, extract_archive, resolves_inside
from forklift.source.hashing import file_sha256
from forklift.source.limits import Limits, UnsafeMember, clean_member
from forklift.source.tarstream import Member, TarStream

SITE_FOLDERS = ("site-packages", "dist-packages")
OPAQUE = ".wh..wh..opq"
WHITEOUT = ".wh."
MAX_JSON_BYTES = 4 << 20  # an index, manifest or config is kilobytes
MAX_NESTING = 4  # image indexes pointing at image indexes
INDEX_TYPES = ("application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json")
REF_NAME = "org.opencontainers.image.ref.name"


@dataclass(frozen=True)
class Layer:
    path: Path
    media_type: str
    diff_id: str | None  # sha256 of the uncompressed tar, when the format binds it (docker save)


@dataclass(frozen=True)
class Image:
    """One image of an archive: what its config says, and its layers bottom first."""

    format: str  # "oci" or "docker"
    image_id: str  # sha256:<digest of the config>, what podman and docker call the image ID
    labels: dict[str, str]
    layers: tuple[Layer, ...]


@dataclass(frozen=True)
class UnpackedEngine:
    image: Image
    site: Path  # the scratch site-packages holding the engine's files
    site_in_image: str  # where that folder is in the image, e.g. usr/lib/python3/dist-packages


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
        rootfs = Path(scratch) / "rootfs"
        apply_layers(image, rootfs, package, limits, archive)
        sites = sorted(
            p.parent.relative_to(rootfs).as_posix()
            for p in rootfs.glob(f"**/{package}/__init__.py")
            if p.parent.parent.name in SITE_FOLDERS
        )
        if not sites:
            raise ForkliftError(
                f"{archive}: no installed {package} in the image's {len(image.layers)} layer(s)"
                f" (no */site-packages/{package}/__init__.py)"
            )
        if len(sites) > 1:
            raise ForkliftError(f"{archive}: {package} is installed in {len(sites)} places: {', '.join(sites)}")
        site = posixpath.dirname(sites[0])
        yield UnpackedEngine(image, rootfs / site, site)


def read_image(root: Path, archive: Path, tag: str | None) -> Image:
    """The image an OCI layout or a docker save folder holds (`tag` picks one of several)."""
    if (root / "index.json").is_file():
        return _oci_image(root, archive, tag)
    if (root / "manifest.json").is_file():
        return _docker_image(root, archive, tag)
    raise ForkliftError(
        f"{archive}: neither an OCI image layout (index.json) nor a docker save archive (manifest.json)"
    )


def _oci_image(root: Path, archive: Path, tag: str | None) -> Image:
    manifests = _oci_manifests(root, archive, _json(root / "index.json", archive), tag, 0)
    if tag is not None:
        manifests = [(d, ref) for d, ref in manifests if ref == tag]
    if len(manifests) != 1:
        refs = ", ".join(ref or d["digest"][:19] for d, ref in manifests) or "none"
        which = f"tagged {tag!r}" if tag else "(pick one with --tag)"
        raise ForkliftError(f"{archive}: {len(manifests)} images {which} in the layout: {refs}")
    manifest = _json(_blob(root, manifests[0][0], archive), archive)
    config_path = _blob(root, _descriptor(manifest.get("config"), archive), archive)
    config = _json(config_path, archive)
    layers = tuple(
        Layer(_blob(root, d, archive), str(d.get("mediaType", "")), None)
        for d in (_descriptor(item, archive) for item in _list(manifest.get("layers"), "layers", archive))
    )
    return Image("oci", "sha256:" + file_sha256(config_path), _labels(config, archive), layers)


def _oci_manifests(
    root: Path, archive: Path, index: dict[str, Any], tag: str | None, depth: int
) -> list[tuple[dict[str, Any], str | None]]:
    """(descriptor, ref name) of every image manifest the index reaches, nested indexes followed."""
    if depth > MAX_NESTING:
        raise ForkliftError(f"{archive}: image indexes nested deeper than {MAX_NESTING}")
    found = []
    for item in _list(index.get("manifests"), "manifests", archive):
        descriptor = _descriptor(item, archive)
        ref = (descriptor.get("annotations") or {}).get(REF_NAME)
        if descriptor.get("mediaType") in INDEX_TYPES:
            inner = _oci_manifests(root, archive, _json(_blob(root, descriptor, archive), archive), tag, depth + 1)
            found += [(d, inner_ref or ref) for d, inner_ref in inner]
        else:
            found.append((descriptor, ref))
    return found


def _docker_image(root: Path, archive: Path, tag: str | None) -> Image:
    entries = [
        e for e in _list(_json(root / "manifest.json", archive), "manifest.json", archive) if isinstance(e, dict)
    ]
    if tag is not None:
        entries = [e for e in entries if tag in (e.get("RepoTags") or [])]
    if len(entries) != 1:
        tags = ", ".join(t for e in entries for t in (e.get("RepoTags") or ["(untagged)"])) or "none"
        which = f"tagged {tag!r}" if tag else "(pick one with --tag)"
        raise ForkliftError(f"{archive}: {len(entries)} images {which} in manifest.json: {tags}")
    entry = entries[0]
    config_path = _member(root, entry.get("Config"), archive)
    config = _json(config_path, archive)
    diff_ids = list((config.get("rootfs") or {}).get("diff_ids") or [])
    paths = [_member(root, p, archive) for p in _list(entry.get("Layers"), "Layers", archive)]
    if diff_ids and len(diff_ids) != len(paths):
        raise ForkliftError(f"{archive}: the config lists {len(diff_ids)} diff_ids for {len(paths)} layers")
    layers = tuple(Layer(path, "", str(diff_ids[i]) if diff_ids else None) for i, path in enumerate(paths))
    return Image("docker", "sha256:" + file_sha256(config_path), _labels(config, archive), layers)


def apply_layers(image: Image, rootfs: Path, package: str, limits: Limits, archive: Path) -> None:
    """Apply the layers bottom first into `rootfs`, writing only the engine's files."""
    rootfs.mkdir()
    writer = TreeWriter(rootfs, f"image {archive.name}", limits)
    try:
        for number, layer in enumerate(image.layers, 1):
            _apply_layer(layer, number, rootfs, writer, package, limits, archive)
    finally:
        writer.close()


def _apply_layer(
    layer: Layer, number: int, rootfs: Path, writer: TreeWriter, package: str, limits: Limits, archive: Path
) -> None:
    label = f"{archive} layer {number}"
    if "zstd" in layer.media_type:
        raise ForkliftError(f"{label}: a zstd layer ({layer.media_type}); forklift reads tar and gzip layers only")
    if layer.diff_id is not None and _is_plain_tar(layer.path) and f"sha256:{file_sha256(layer.path)}" != layer.diff_id:
        raise ForkliftError(f"{label}: {layer.path.name} does not match the config's diff_id {layer.diff_id}")
    written: set[str] = set()  # what this layer put in rootfs: its own whiteouts never hide it
    with open(layer.path, "rb") as handle:
        stream = TarStream(handle, label, limits, layer.path.stat().st_size)
        for member in stream:
            rel = clean_member(member.name, label)
            if not rel:
                continue
            leaf = posixpath.basename(rel)
            if leaf == OPAQUE:
                _hide(rootfs, posixpath.dirname(rel), written, keep_folder=True)
            elif leaf.startswith(WHITEOUT):
                _hide(rootfs, posixpath.join(posixpath.dirname(rel), leaf[len(WHITEOUT) :]), written)
            elif _engine_path(rel, package):
                _write_member(stream, member, rel, rootfs, writer, written, label)


def _write_member(
    stream: TarStream,
    member: Member,
    rel: str,
    rootfs: Path,
    writer: TreeWriter,
    written: set[str],
    label: str,
) -> None:
    lower = rootfs / rel
    is_dir = member.kind == "folder"
    if rel not in written and lower.exists() and (is_dir != lower.is_dir() or lower.is_symlink()):
        _remove(lower)  # a lower layer's entry of another kind: this one replaces it
    if is_dir:
        writer.folder(rel, member.name)
    elif member.kind == "file":
        writer.file(rel, stream, member.name, executable=bool(member.mode & stat.S_IXUSR))
    elif member.kind == "hardlink":
        writer.hardlink(rel, clean_member(member.linkname, label, member.name), member.name)
    elif member.kind == "symlink":
        raise UnsafeMember(f"{label}: {member.name!r} is a symlink; an installed wheel has none")
    else:
        raise UnsafeMember(f"unsafe {label}: member {member.name!r} is a device, fifo or other special file")
    written.add(rel)


def _hide(rootfs: Path, rel: str, written: set[str], keep_folder: bool = False) -> None:
    """A whiteout: what lower layers put at `rel` is gone (an opaque one empties the folder instead)."""
    if not rel or not resolves_inside(rootfs, rel):
        return
    target = rootfs / rel
    if not keep_folder:
        if rel not in written and (target.exists() or target.is_symlink()):
            _remove(target)
        return
    if target.is_dir() and not target.is_symlink():
        for child in target.iterdir():
            child_rel = f"{rel}/{child.name}"
            if child_rel not in written and not any(w.startswith(child_rel + "/") for w in written):
                _remove(child)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _engine_path(rel: str, package: str) -> bool:
    """Whether `rel` is the engine package or a dist-info folder in a site-packages folder (or on the way)."""
    parts = rel.split("/")
    for i, part in enumerate(parts[:-1]):
        if part in SITE_FOLDERS:
            top = parts[i + 1]
            return top == package or top.endswith(".dist-info")
    return False


def _is_plain_tar(path: Path) -> bool:
    with open(path, "rb") as handle:
        head = handle.read(2)
    return head != b"\x1f\x8b"  # docker save writes uncompressed layers; a gzip one has no diff_id of its bytes


def _blob(root: Path, descriptor: dict[str, Any], archive: Path) -> Path:
    """The blob a descriptor names, held to its digest."""
    digest = str(descriptor.get("digest", ""))
    algorithm, _, hexdigest = digest.partition(":")
    if algorithm != "sha256" or len(hexdigest) != 64 or not all(c in "0123456789abcdef" for c in hexdigest):
        raise ForkliftError(f"{archive}: descriptor digest {digest[:80]!r} is not sha256:<64 hex>")
    path = root / "blobs" / "sha256" / hexdigest
    if not path.is_file() or path.is_symlink():
        raise ForkliftError(f"{archive}: blob {digest} is missing")
    if (found := file_sha256(path)) != hexdigest:
        raise ForkliftError(f"{archive}: blob {digest} holds bytes with sha256 {found}")
    return path


def _member(root: Path, name: object, archive: Path) -> Path:
    """A file a docker manifest.json names: inside the archive, a regular file."""
    if not isinstance(name, str) or not name:
        raise ForkliftError(f"{archive}: manifest.json names a file with {name!r}")
    rel = clean_member(name, f"archive {archive.name}")
    if not resolves_inside(root, rel) or not (root / rel).is_file():
        raise ForkliftError(f"{archive}: manifest.json names {name!r}, which is not a file in the archive")
    return root / rel


def _json(path: Path, archive: Path) -> Any:
    if path.stat().st_size > MAX_JSON_BYTES:
        raise ForkliftError(f"{archive}: {path.name} is over {MAX_JSON_BYTES} bytes; not an image index or config")
    try:
        return json.loads(path.read_bytes())
    except ValueError as exc:
        raise ForkliftError(f"{archive}: {path.name} is not JSON: {exc}") from None


def _list(value: object, what: str, archive: Path) -> list[Any]:
    if not isinstance(value, list):
        raise ForkliftError(f"{archive}: {what} is not a list")
    return value


def _descriptor(value: object, archive: Path) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ForkliftError(f"{archive}: a descriptor is not an object: {str(value)[:80]!r}")
    return value


def _labels(config: dict[str, Any], archive: Path) -> dict[str, str]:
    labels = (config.get("config") or {}).get("Labels") or {}
    if not isinstance(labels, dict):
        raise ForkliftError(f"{archive}: the image config's Labels is not an object")
    return {str(k): str(v) for k, v in labels.items()}
