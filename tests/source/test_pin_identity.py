"""A pin names one release: a pin whose package or version is not its file's is refused in one line, whether or
not that file is already in the cache (the cache is addressed by sha256, so before this a cached 0.32.0 answered
a pin of 0.32.9 with 0.32.0's sha256, and `check` said OK)."""

from __future__ import annotations

import io
import random
import shutil
import zipfile

import pytest

from forklift.config.schema import PypiPin
from forklift.errors import ForkliftError, UsageError
from forklift.source.materialize import materialize
from tests.cli import EXAMPLE, forklift
from tests.fixtures.pypi import VLLM_032
from tests.source.helpers import make_tar, sdist_bytes


def _check_example(tmp_path, env, **upstream) -> tuple[int, list[str]]:
    """`forklift check` on the example distribution with [upstream] keys changed as given."""
    dist = tmp_path / "dist"
    shutil.copytree(EXAMPLE, dist)
    toml = (dist / "forklift.toml").read_text()
    for key, value in upstream.items():
        original = getattr(VLLM_032, key)
        toml = toml.replace(f'{key} = "{original}"', f'{key} = "{value}"', 1)
    (dist / "forklift.toml").write_text(toml)
    done = forklift("-c", dist, "check", "--receipts", tmp_path / "receipts", cwd=tmp_path, env=env)
    return done.returncode, done.stderr.strip().splitlines()


@pytest.mark.network
@pytest.mark.parametrize("ci", [None, "true"])
@pytest.mark.parametrize(
    ("upstream", "said"),
    [
        ({"version": "0.32.9"}, "is vllm 0.32.0 (its PKG-INFO), not vllm 0.32.9"),
        ({"package": "vlmm"}, "not vlmm 0.32.0"),
    ],
)
def test_a_pin_naming_another_release_is_refused_with_the_real_sdist_cached(
    vllm_032_tree, tmp_path, ci, upstream, said
):
    """The real vllm 0.32.0 sdist is in the cache; a pin of 0.32.9 (or of `vlmm`) with its sha256 checks nothing."""
    code, lines = _check_example(tmp_path, {"CI": ci}, **upstream)
    assert code == 1 and len(lines) == 1, lines
    assert said in lines[0] and lines[0].startswith("error: "), lines


@pytest.mark.network
def test_the_same_pin_with_an_empty_cache_is_refused_too(tmp_path):
    code, lines = _check_example(tmp_path, {"FORKLIFT_CACHE": str(tmp_path / "empty")}, version="0.32.9")
    if code == 1 and "cannot reach" in lines[-1]:
        pytest.skip(f"SKIPPED: the index is unreachable: {lines[-1]}")
    assert code != 0 and len(lines) == 1 and "0.32.9" in lines[0], lines


def test_a_file_name_naming_another_release_is_refused_before_any_cache(tmp_path, dead_index):
    pin = PypiPin(source="pypi", package="vllm", version="0.32.9", filename="vllm-0.32.0.tar.gz", sha256="0" * 64)
    with pytest.raises(UsageError) as caught:
        materialize(pin, tmp_path, index_url=dead_index)
    assert str(caught.value) == (
        "upstream.filename 'vllm-0.32.0.tar.gz' is vllm 0.32.0, but the pin names vllm 0.32.9;"
        " fix upstream.package/version or the file and its sha256"
    )


def test_a_cached_sdist_answers_only_the_pin_its_metadata_names(index_server, cache, tmp_path, dead_index):
    sha = index_server.add("pkg", "pkg-1.0.tar.gz", sdist_bytes())
    right = PypiPin(source="pypi", package="PKG", version="1.0.0", sha256=sha)  # PEP 503 / 440 spellings of pkg 1.0
    materialize(right, tmp_path, cache, index_url=index_server.index)
    for wrong in ({"version": "1.1"}, {"package": "pgk"}):
        pin = right.model_copy(update=wrong)
        with pytest.raises(ForkliftError, match=r"is pkg 1\.0 \(its PKG-INFO\), not ") as caught:
            materialize(pin, tmp_path, cache, index_url=dead_index)  # cached: the index is never asked
        assert "\n" not in str(caught.value)


def test_a_wheel_is_proven_by_its_dist_info_metadata(index_server, cache, tmp_path):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as wheel:
        wheel.writestr("pkg/__init__.py", "")
        wheel.writestr("pkg-2.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: pkg\nVersion: 2.0\n")
    sha = index_server.add("pkg", "pkg-2.0-py3-none-any.whl", out.getvalue())
    pin = PypiPin(source="pypi", package="pkg", version="2.0", filename="pkg-2.0-py3-none-any.whl", sha256=sha)
    materialize(pin, tmp_path, cache, index_url=index_server.index)
    liar = pin.model_copy(update={"version": "2.1", "filename": "pkg-2.1-py3-none-any.whl"})
    with pytest.raises(ForkliftError, match=r"is pkg 2\.0 \(its METADATA\), not pkg 2\.1"):
        materialize(liar, tmp_path, cache, index_url=index_server.index)


@pytest.mark.parametrize(
    ("members", "said"),
    [
        ([], "the pinned file has no PKG-INFO, so nothing proves it is the pinned release"),
        ([("pkg-1.0/PKG-INFO", "symlink", "pkg/__init__.py")], "its PKG-INFO is a symlink; refusing"),
        ([("pkg-1.0/PKG-INFO", "file", "Name: pkg\n\nVersion: 1.0\n")], "PKG-INFO names no Name and Version"),
        (
            [("pkg-1.0/PKG-INFO", "file", b"Name: pkg\nVersion: 1.0\n\n" + random.Random(0).randbytes(5 << 20))],
            "over the 4 MiB limit",
        ),
    ],
)
def test_an_sdist_whose_metadata_proves_nothing_is_refused(index_server, cache, tmp_path, members, said):
    """Hostile or missing metadata: one line, never a guess (the version after the blank line is the body's)."""
    content = make_tar([("pkg-1.0/pkg/__init__.py", "file", "VALUE = 1\n"), *members])
    sha = index_server.add("pkg", "pkg-1.0.tar.gz", content)
    pin = PypiPin(source="pypi", package="pkg", version="1.0", sha256=sha)
    with pytest.raises(ForkliftError, match=said) as caught:
        materialize(pin, tmp_path, cache, index_url=index_server.index)
    assert "\n" not in str(caught.value)
