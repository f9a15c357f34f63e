"""Bad input to `forklift wheel`, `forklift image` and `verify --image` is one line naming the culprit."""

from __future__ import annotations

import io
import tarfile

import pytest

from tests.cli import forklift
from tests.fixtures.pypi import VLLM_032
from tests.ship.conftest import SITE, ensure_tools, layer_tar, run, write_distribution

SO_PATCH = """Subject: patch the compiled kernels

--- a/vllm/_C.abi3.so
+++ b/vllm/_C.abi3.so
@@ -1 +1 @@
-old
+new
"""


def one_line(result, code: int = 1) -> str:
    assert result.returncode == code, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    return line


@pytest.mark.parametrize("command", [("wheel", "out"), ("image", "--print")])
def test_an_sdist_pin_is_refused(tmp_path, command):
    folder = write_distribution(tmp_path, pin=VLLM_032)
    line = one_line(forklift(*command, cwd=folder), code=2)
    assert line.startswith(f"error: {folder / 'forklift.toml'}: forklift wheel needs a wheel pin")
    assert "pins the vllm 0.32.0 sdist" in line


@pytest.mark.network  # the wheel comes from the index on first use
def test_a_series_touching_a_native_library_is_refused(tmp_path, upstream_wheel):
    series = tmp_path / "patches"
    series.mkdir()
    (series / "series").write_text("0001-kernels.patch\n")
    (series / "0001-kernels.patch").write_text(SO_PATCH)
    folder = write_distribution(tmp_path / "dist", series_dir=series)
    line = one_line(forklift("wheel", "out", cwd=folder))
    assert line == (
        "error: 0001-kernels.patch: touches vllm/_C.abi3.so, a compiled file; a wheel carries native libraries"
        " unchanged (rebuild it upstream, or drop the hunk)"
    )
    assert not (folder / "out").exists() or not any((folder / "out").iterdir())


@pytest.fixture
def scratch_layout(tmp_path):
    """An empty image made by umoci, to add hostile layers to."""
    ensure_tools()
    path = tmp_path / "layout"
    run("umoci", "init", "--layout", path)
    run("umoci", "new", "--image", f"{path}:empty")
    return path


def hostile_tar(path, member: tarfile.TarInfo) -> None:
    with tarfile.open(path, "w") as tar:
        tar.addfile(tarfile.TarInfo(f"{SITE}/vllm/__init__.py"), io.BytesIO())
        tar.addfile(member, io.BytesIO(b"x" * member.size) if member.isreg() else None)


def climbing() -> tarfile.TarInfo:
    info = tarfile.TarInfo(f"{SITE}/vllm/../../../../../../tmp/forklift-escaped")
    info.size = 1
    return info


def device() -> tarfile.TarInfo:
    info = tarfile.TarInfo(f"{SITE}/vllm/null")
    info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
    return info


@pytest.mark.parametrize(
    ("member", "said"),
    [
        (climbing, " layer 1: member '{SITE}/vllm/../../../../../../tmp/forklift-escaped' climbs out with '..'"),
        (device, ": /{SITE}/vllm/null is a device, fifo or other special file"),
    ],
)
def test_a_hostile_layer_is_refused_before_anything_lands_outside(tmp_path, scratch_layout, member, said):
    """The layer tar is written here (a hostile one is what no tool makes); umoci adds it to the image."""
    hostile_tar(tmp_path / "layer.tar", member())
    run(
        "umoci",
        "raw",
        "add-layer",
        "--no-history",
        "--image",
        f"{scratch_layout}:empty",
        "--tag",
        "bad",
        tmp_path / "layer.tar",
    )
    folder = write_distribution(tmp_path / "dist")
    line = one_line(forklift("verify", "--image", scratch_layout, "--tag", "bad", cwd=folder))
    assert line == f"error: unsafe {scratch_layout}{said.format(SITE=SITE)}"


def test_a_hostile_outer_archive_goes_through_the_safe_extraction(tmp_path):
    archive = tmp_path / "image.tar"
    hostile_tar(archive, climbing_outer())
    folder = write_distribution(tmp_path / "dist")
    line = one_line(forklift("verify", "--image", archive, cwd=folder))
    assert line.startswith("error: unsafe archive image.tar: member '../escaped' climbs out with '..'")


def climbing_outer() -> tarfile.TarInfo:
    info = tarfile.TarInfo("../escaped")
    info.size = 1
    return info


def test_a_folder_that_is_no_image_is_one_line(tmp_path):
    folder = write_distribution(tmp_path / "dist")
    line = one_line(forklift("verify", "--image", tmp_path, cwd=folder))
    assert (
        line == f"error: {tmp_path}: neither an OCI image layout (index.json) nor a docker save archive (manifest.json)"
    )


def test_a_blob_changed_after_the_layout_was_written_is_one_line(tmp_path, scratch_layout):
    layer_tar(tmp_path / "layer.tar", {f"{SITE}/vllm/__init__.py": b""})
    run(
        "umoci",
        "raw",
        "add-layer",
        "--no-history",
        "--image",
        f"{scratch_layout}:empty",
        "--tag",
        "one",
        tmp_path / "layer.tar",
    )
    import json

    index = json.loads((scratch_layout / "index.json").read_text())
    manifest_digest = next(
        m["digest"] for m in index["manifests"] if m["annotations"]["org.opencontainers.image.ref.name"] == "one"
    )
    manifest = json.loads((scratch_layout / "blobs" / "sha256" / manifest_digest.split(":")[1]).read_text())
    blob = scratch_layout / "blobs" / "sha256" / manifest["layers"][0]["digest"].split(":")[1]
    blob.write_bytes(blob.read_bytes() + b"\0")
    folder = write_distribution(tmp_path / "dist")
    line = one_line(forklift("verify", "--image", scratch_layout, "--tag", "one", cwd=folder))
    assert line.startswith(f"error: {scratch_layout}: blob {manifest['layers'][0]['digest']} holds bytes with sha256 ")
