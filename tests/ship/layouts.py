"""Image archives built here with tarfile and json, for the hostile cases no image tool writes (fault injection).

A layer is a list of entries: (name, bytes) a file, (name, None) a folder, (name, "->target") a symlink,
(name, "=>target") a hard link.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

Entry = tuple[str, bytes | str | None]
SITE = "usr/lib/python3/site-packages"


def layer_bytes(entries: list[Entry]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, body in entries:
            info = tarfile.TarInfo(name)
            if body is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
            elif isinstance(body, str):
                info.type = tarfile.SYMTYPE if body.startswith("->") else tarfile.LNKTYPE
                info.linkname = body[2:]
            else:
                info.size = len(body)
            tar.addfile(info, io.BytesIO(body) if isinstance(body, bytes) else None)
    return out.getvalue()


def blob(root: Path, data: bytes) -> dict:
    digest = hashlib.sha256(data).hexdigest()
    (root / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
    (root / "blobs" / "sha256" / digest).write_bytes(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def config_json(layers: list[bytes], labels: dict | None = None, env: list[str] | None = None) -> dict:
    diff_ids = [f"sha256:{hashlib.sha256(data).hexdigest()}" for data in layers]
    inner = {"Labels": labels or {}, **({"Env": env} if env is not None else {})}
    return {"architecture": "amd64", "os": "linux", "config": inner, "rootfs": {"type": "layers", "diff_ids": diff_ids}}


def oci_layout(root: Path, layers: list[list[Entry]], tag: str = "t", config: dict | None = None, **kw) -> Path:
    """An OCI layout of one image tagged `tag` (`config` replaces the one made from the layers)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    data = [layer_bytes(entries) for entries in layers]
    descriptors = [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **blob(root, d)} for d in data]
    config_blob = blob(root, json.dumps(config or config_json(data, **kw)).encode())
    manifest = {
        "schemaVersion": 2,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config_blob},
        "layers": descriptors,
    }
    manifest_blob = blob(root, json.dumps(manifest).encode())
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                **manifest_blob,
                "annotations": {"org.opencontainers.image.ref.name": tag},
            }
        ],
    }
    (root / "index.json").write_text(json.dumps(index))
    return root


def docker_archive(root: Path, layers: list[list[Entry]], repo_tags: object, **kw) -> Path:
    """A docker save folder: manifest.json, the config, one tar per layer."""
    root.mkdir(parents=True, exist_ok=True)
    data = [layer_bytes(entries) for entries in layers]
    names = []
    for number, d in enumerate(data):
        (root / f"{number}.tar").write_bytes(d)
        names.append(f"{number}.tar")
    (root / "config.json").write_text(json.dumps(config_json(data, **kw)))
    (root / "manifest.json").write_text(json.dumps([{"Config": "config.json", "RepoTags": repo_tags, "Layers": names}]))
    return root


def engine(site: str = SITE, marker: bytes = b"# the engine\n", version: str = "0.32.0") -> list[Entry]:
    """A tiny installed package `vllm` (its __init__.py says `marker`) with a dist-info folder."""
    return [
        (f"{site}/vllm/__init__.py", marker),
        (f"{site}/vllm-{version}.dist-info/METADATA", f"Name: vllm\nVersion: {version}\n".encode()),
    ]
