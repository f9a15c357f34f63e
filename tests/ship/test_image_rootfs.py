"""The engine `verify --image` proves is the one the image's runtime shows and its own Python imports.

Each image is built here (tests/ship/layouts.py): a later layer turning site-packages into a symlink to
another vllm, a root opaque whiteout, a hard link over the engine, diff_ids naming other layers, a venv
python beside a system vllm, a tag that only contains the asked one. Unpacked directly, so the file
proven can be read back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from forklift.errors import ForkliftError
from forklift.ship.image import unpacked_engine
from tests.ship.layouts import SITE, config_json, docker_archive, engine, layer_bytes, oci_layout

EVIL = b"# another vllm\n"
VENV_SITE = "opt/venv/lib/python3.12/site-packages"


def proven(archive: Path, tag: str | None = "t") -> tuple[str, str | None, bytes]:
    with unpacked_engine(archive, "vllm", tag) as unpacked:
        return unpacked.site_in_image, unpacked.interpreter, (unpacked.site / "vllm" / "__init__.py").read_bytes()


def test_a_plain_image_proves_its_one_engine(tmp_path):
    assert proven(oci_layout(tmp_path / "l", [engine()])) == (SITE, None, b"# the engine\n")


def test_a_later_layer_turning_site_packages_into_a_symlink_proves_what_it_points_at(tmp_path):
    layers = [engine(), engine("opt/other/site-packages", EVIL), [(SITE, "->/opt/other/site-packages")]]
    assert proven(oci_layout(tmp_path / "l", layers)) == ("opt/other/site-packages", None, EVIL)


def test_a_symlinked_parent_folder_is_followed_as_the_kernel_follows_it(tmp_path):
    """usr/lib/python3 -> ../../opt/py: the engine's files written later land in opt/py (relative link)."""
    layers = [[("opt/py", None), ("usr/lib", None), ("usr/lib/python3", "->../../opt/py")], engine(marker=EVIL)]
    assert proven(oci_layout(tmp_path / "l", layers)) == ("opt/py/site-packages", None, EVIL)


def test_a_root_opaque_whiteout_hides_the_engine(tmp_path):
    layers = [engine(), [(".wh..wh..opq", b"")]]
    with pytest.raises(ForkliftError, match=r"no python on the image's PATH, and 0 vllm installs"):
        proven(oci_layout(tmp_path / "l", layers))


def test_an_opaque_whiteout_keeps_what_its_own_layer_puts_there(tmp_path):
    layers = [engine(), [(f"{SITE}/.wh..wh..opq", b""), *engine(marker=EVIL)]]
    assert proven(oci_layout(tmp_path / "l", layers))[2] == EVIL


def test_a_hard_link_over_the_engine_takes_the_linked_files_bytes(tmp_path):
    layers = [[*engine(), ("etc/evil.py", EVIL)], [(f"{SITE}/vllm/__init__.py", "=>etc/evil.py")]]
    assert proven(oci_layout(tmp_path / "l", layers))[2] == EVIL


def test_diff_ids_naming_other_layers_are_refused(tmp_path):
    config = config_json([layer_bytes(engine(marker=EVIL))])
    archive = oci_layout(tmp_path / "l", [engine()], config=config)
    with pytest.raises(ForkliftError, match=r"layer 1: its uncompressed sha256 is [0-9a-f]{64}, the config's diff_id"):
        proven(archive)


def test_the_image_python_imports_its_venv_first(tmp_path):
    venv = "opt/venv"
    layers = [
        [("usr/bin/python3.12", b"\x7fELF"), ("usr/bin/python3", "->python3.12"), *engine(marker=EVIL)],
        [
            (f"{venv}/pyvenv.cfg", b"home = /usr/bin\ninclude-system-site-packages = false\n"),
            (f"{venv}/bin/python3", "->/usr/bin/python3"),
            *engine(f"{venv}/lib/python3.12/site-packages"),
        ],
    ]
    env = [f"PATH=/{venv}/bin:/usr/bin"]
    assert proven(oci_layout(tmp_path / "l", layers, env=env)) == (
        f"{venv}/lib/python3.12/site-packages",
        f"/{venv}/bin/python3",
        b"# the engine\n",
    )
    without_venv_on_path = oci_layout(tmp_path / "m", layers, env=["PATH=/usr/bin"])
    with pytest.raises(
        ForkliftError,
        match=r"/usr/bin/python3 would not import vllm \(not on its path\); it is installed in /opt/venv/lib/python3.12/site-packages, /usr/lib/python3/site-packages",
    ):
        proven(without_venv_on_path)


def test_pythonpath_comes_first(tmp_path):
    layers = [[("usr/bin/python3.12", b""), ("usr/bin/python3", "->python3.12"), *engine(), *engine("srv/app", EVIL)]]
    archive = oci_layout(tmp_path / "l", layers, env=["PATH=/usr/bin", "PYTHONPATH=/srv/app"])
    assert proven(archive) == ("srv/app", "/usr/bin/python3", EVIL)


@pytest.mark.parametrize("repo_tags", ["registry.example/evilvllm:1.0-rc", ["registry.example/evilvllm:1.0-rc"]])
def test_a_tag_is_matched_exactly(tmp_path, repo_tags):
    archive = docker_archive(tmp_path / "d", [engine(marker=EVIL)], repo_tags)
    with pytest.raises(ForkliftError) as caught:
        proven(archive, "vllm:1")
    assert "evil" not in str(caught.value) or "RepoTags" in str(caught.value)
    assert "\n" not in str(caught.value)


def index_with(archive: Path, mutate) -> Path:
    import json

    index = json.loads((archive / "index.json").read_text())
    mutate(index)
    (archive / "index.json").write_text(json.dumps(index))
    return archive


@pytest.mark.parametrize(
    ("mutate", "said"),
    [
        (lambda i: i.update(manifests={}), "index.json: manifests: Input should be a valid array"),
        (lambda i: i["manifests"][0].pop("digest"), "index.json: manifests.0.digest: missing (required)"),
        (
            lambda i: i["manifests"][0]["annotations"].update({"org.opencontainers.image.ref.name": 1}),
            "ref.name: Input should be a valid string",
        ),
        (lambda i: i["manifests"].__setitem__(0, [1]), "index.json: manifests.0: Input should be an object"),
    ],
)
def test_a_wrong_shape_is_one_line_naming_the_field(tmp_path, mutate, said):
    archive = index_with(oci_layout(tmp_path / "l", [engine()]), mutate)
    with pytest.raises(ForkliftError) as caught:
        proven(archive)
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_an_index_dag_is_walked_once_and_bounded(tmp_path):
    """16 wide and 5 deep: every index names the next one 16 times (16**4 paths to one manifest, 5 index files),
    each index is read once."""
    import hashlib
    import json

    archive = oci_layout(tmp_path / "l", [engine()])
    inner = json.loads((archive / "index.json").read_text())
    for _ in range(4):  # the top index and 4 below it: 5 deep
        data = json.dumps(inner).encode()
        digest = hashlib.sha256(data).hexdigest()
        (archive / "blobs" / "sha256" / digest).write_bytes(data)
        link = {"mediaType": "application/vnd.oci.image.index.v1+json", "digest": f"sha256:{digest}", "size": len(data)}
        inner = {"schemaVersion": 2, "manifests": [link] * 16}
    (archive / "index.json").write_text(json.dumps(inner))
    assert proven(archive) == (SITE, None, b"# the engine\n")  # one image, reached 65,536 ways


def test_indexes_listing_too_many_descriptors_are_one_short_line(tmp_path):
    import json

    archive = oci_layout(tmp_path / "l", [engine()])
    index = json.loads((archive / "index.json").read_text())
    index["manifests"] *= 1025
    (archive / "index.json").write_text(json.dumps(index))
    with pytest.raises(ForkliftError, match=r"index.json: manifests: List should have at most 1024 items") as caught:
        proven(archive)
    assert len(str(caught.value)) < 500


def test_layer_members_are_counted_against_the_archive_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("FORKLIFT_EXTRACT_MAX_MEMBERS", "50")
    layers = [[*engine(), *[(f"etc/f{i}", b"") for i in range(60)]]]
    with pytest.raises(ForkliftError, match=r"layer 1: more than 50 members \(raise upstream.extract.max_members"):
        proven(oci_layout(tmp_path / "l", layers))


def test_an_init_that_is_a_folder_is_no_engine(tmp_path):
    """Found by the fuzz (tests/properties/test_any_image.py): vllm/__init__.py made a folder is imported by nothing."""
    layers = [[("usr/bin/python3.12", b""), ("opt/venv/bin/python3", "->/usr/bin/python3.12")]]
    layers[0] += [("opt/venv/pyvenv.cfg", b"home = /usr/bin\n"), (f"{VENV_SITE}/vllm/__init__.py", None)]
    archive = oci_layout(tmp_path / "l", layers, env=["PATH=/opt/venv/bin"])
    with pytest.raises(ForkliftError, match=r": /opt/venv/bin/python3 would not import vllm \(not on its path\)$"):
        proven(archive)
