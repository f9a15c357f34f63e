"""The names a shipped artifact carries, and what a launch reads of the image it runs in."""

from __future__ import annotations

from forklift.launch.plan import running_image
from forklift.receipts.envelope import default_build
from forklift.ship.labels import local_version

OVERLAY = "sha256:e6745a56d45dfe9c56724cac8818aa50921d92c0d9b34a5034a367e023e482a3"


def test_local_version_names_the_overlay_and_keeps_an_upstream_label():
    assert local_version("0.32.0", OVERLAY) == "0.32.0+forklift.e6745a56"
    assert local_version("0.32.0+cpu", OVERLAY) == "0.32.0+cpu.forklift.e6745a56"


def test_the_build_label_of_a_forklift_wheel_is_its_version():
    assert default_build("0.32.0+forklift.e6745a56", OVERLAY) == "0.32.0+forklift.e6745a56"
    assert default_build("0.32.0", OVERLAY) == "0.32.0+e6745a56"
    assert default_build("0.32.0+forklift.00000000", OVERLAY) == "0.32.0+forklift.00000000+e6745a56"


def test_running_image_from_the_environment_then_podmans_containerenv(tmp_path):
    containerenv = tmp_path / ".containerenv"
    assert running_image({}, containerenv) is None
    containerenv.write_text('engine="podman-4.3.1"\nname="x"\nimage="localhost/vllm:patched"\nimageid="3a6dea28f08d"\n')
    assert running_image({}, containerenv) == "3a6dea28f08d"
    assert running_image({"FORKLIFT_IMAGE": "sha256:abc"}, containerenv) == "sha256:abc"
    containerenv.write_text('engine="podman-4.3.1"\nimageid=""\n')  # unprivileged containers leave it empty
    assert running_image({}, containerenv) is None
