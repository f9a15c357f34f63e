"""`forklift fetch` and `forklift init` as a user runs them (a child process: exit codes, stderr)."""

from __future__ import annotations

import hashlib

import pytest

from forklift.config import load_config
from forklift.config.schema import GitPin, PathPin, PypiPin
from forklift.source.scaffold import SERIES_HEADER
from tests.cli import forklift
from tests.fixtures.pypi import VLLM_032_UPSTREAM
from tests.source.helpers import git, sdist_bytes


@pytest.fixture
def env(tmp_path):
    return {"FORKLIFT_CACHE": str(tmp_path / "cache")}


def test_init_pypi_writes_a_valid_config_then_fetch(index_server, tmp_path, env):
    sha = index_server.add("pkg", "pkg-1.0.tar.gz", sdist_bytes())
    env = {**env, "PIP_INDEX_URL": index_server.index}
    done = forklift("init", "--pypi", "pkg==1.0", "--dir", "dist", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    config = load_config(tmp_path / "dist" / "forklift.toml")
    assert config.data.engine.kind == "generic"
    assert config.data.upstream == PypiPin(source="pypi", package="pkg", version="1.0", sha256=sha)
    assert (tmp_path / "dist" / "patches" / "series").read_text() == SERIES_HEADER

    fetched = forklift("-c", "dist", "fetch", cwd=tmp_path, env=env)
    assert fetched.returncode == 0, fetched.stderr
    tree = tmp_path / "cache" / "trees" / f"archive-{sha}"
    assert fetched.stdout.splitlines() == ["pkg 1.0 sdist", f"  path   {tree}", f"  digest {sha}"]
    assert (tree / "pkg" / "__init__.py").is_file()


def test_init_refuses_to_overwrite(index_server, tmp_path, env):
    index_server.add("pkg", "pkg-1.0.tar.gz", sdist_bytes())
    (tmp_path / "forklift.toml").write_text("# mine\n")
    done = forklift("init", "--pypi", "pkg==1.0", cwd=tmp_path, env={**env, "PIP_INDEX_URL": index_server.index})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["error: forklift.toml already exists; refusing to overwrite it"]
    assert (tmp_path / "forklift.toml").read_text() == "# mine\n" and not (tmp_path / "patches").exists()


def test_init_keeps_an_existing_quilt_series(index_server, tmp_path, env):
    index_server.add("vllm", "vllm-1.0.tar.gz", sdist_bytes("vllm-1.0"))
    (tmp_path / "patches").mkdir()
    (tmp_path / "patches" / "series").write_text("fix.patch\n")
    done = forklift("init", "--pypi", "vllm==1.0", cwd=tmp_path, env={**env, "PIP_INDEX_URL": index_server.index})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "patches" / "series").read_text() == "fix.patch\n"
    assert load_config(tmp_path).data.engine.kind == "vllm"


def test_init_wheel_records_the_filename(index_server, tmp_path, env):
    sha = index_server.add("pkg", "pkg-1.0-py3-none-any.whl", b"PK\x03\x04 stand-in: init only reads the index")
    index_server.add("pkg", "pkg-1.0.tar.gz", sdist_bytes())
    env = {**env, "PIP_INDEX_URL": index_server.index}
    done = forklift("init", "--pypi", "pkg==1.0", "--wheel", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    upstream = load_config(tmp_path).data.upstream
    assert (upstream.filename, upstream.sha256) == ("pkg-1.0-py3-none-any.whl", sha)


def test_init_git_pins_the_tag_commit(tmp_path, env):
    repo = tmp_path / "vllm"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    git(repo, "tag", "-a", "v0.1", "-m", "v0.1")
    done = forklift("init", "--git", str(repo), "--tag", "v0.1", "--dir", "dist", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    config = load_config(tmp_path / "dist")
    commit = git(repo, "rev-parse", "v0.1^{commit}")  # the annotated tag, peeled
    assert config.data.upstream == GitPin(source="git", url=str(repo), tag="v0.1", commit=commit)
    assert config.data.engine.kind == "vllm"


def test_init_git_local_path_resolves_from_where_the_user_stands(tmp_path, env):
    repo = tmp_path / "dist" / "upstream"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    git(repo, "tag", "v1")
    done = forklift("init", "--git", "dist/upstream", "--tag", "v1", "--dir", "dist", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert load_config(tmp_path / "dist").data.upstream.url == "upstream"  # relative to forklift.toml
    fetched = forklift("-c", "dist", "fetch", cwd=tmp_path, env=env)
    assert fetched.returncode == 0, fetched.stderr


def test_init_path_is_relative_when_inside(tmp_path, env):
    content = sdist_bytes()
    (tmp_path / "pkg-1.0.tar.gz").write_bytes(content)
    done = forklift("init", "--path", "pkg-1.0.tar.gz", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    pin = load_config(tmp_path).data.upstream
    assert pin == PathPin(source="path", path="pkg-1.0.tar.gz", sha256=hashlib.sha256(content).hexdigest())
    assert forklift("fetch", cwd=tmp_path, env=env).returncode == 0


def test_init_path_given_relative_is_written_relative_to_forklift_toml(tmp_path, env):
    content = sdist_bytes()
    (tmp_path / "pkg-1.0.tar.gz").write_bytes(content)
    (tmp_path / "work").mkdir()
    done = forklift("init", "--path", "../pkg-1.0.tar.gz", cwd=tmp_path / "work", env=env)
    assert done.returncode == 0, done.stderr
    assert load_config(tmp_path / "work").data.upstream.path == "../pkg-1.0.tar.gz"
    other = forklift("init", "--path", "pkg-1.0.tar.gz", "--dir", "work/dist", cwd=tmp_path, env=env)
    assert other.returncode == 0, other.stderr
    assert load_config(tmp_path / "work" / "dist").data.upstream.path == "../../pkg-1.0.tar.gz"
    assert forklift("fetch", cwd=tmp_path / "work", env=env).returncode == 0
    assert forklift("-c", "work/dist", "fetch", cwd=tmp_path, env=env).returncode == 0
    absolute = forklift("init", "--path", str(tmp_path / "pkg-1.0.tar.gz"), "--dir", "abs", cwd=tmp_path, env=env)
    assert absolute.returncode == 0 and load_config(tmp_path / "abs").data.upstream.path == str(
        tmp_path / "pkg-1.0.tar.gz"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "give exactly one of --pypi NAME==VERSION, --git URL --tag TAG, --path FILE"),
        (["--pypi", "vllm"], "--pypi 'vllm': expected NAME==VERSION, e.g. vllm==0.32.0"),
        (["--git", "x"], "--git and --tag go together"),
        (["--path", "x.tar.gz", "--wheel"], "--wheel goes with --pypi"),
        (["--path", "nowhere.tar.gz"], "--path nowhere.tar.gz: no such file or folder"),
    ],
)
def test_init_bad_usage(tmp_path, env, args, message):
    done = forklift("init", *args, cwd=tmp_path, env=env)
    assert (done.returncode, done.stderr.strip()) == (2, f"error: {message}")
    assert not (tmp_path / "forklift.toml").exists()


def test_unreachable_index_via_cli(tmp_path, env, dead_index):
    (tmp_path / "forklift.toml").write_text(VLLM_032_UPSTREAM)
    done = forklift("fetch", cwd=tmp_path, env={**env, "PIP_INDEX_URL": dead_index})
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot reach the index {dead_index}/vllm/: ")
    assert "Traceback" not in done.stderr

    (tmp_path / "new").mkdir()
    init = forklift("init", "--pypi", "vllm==0.32.0", cwd=tmp_path / "new", env={**env, "PIP_INDEX_URL": dead_index})
    assert init.returncode == 1 and init.stderr.startswith(f"error: cannot reach the index {dead_index}/vllm/: ")
    assert list((tmp_path / "new").iterdir()) == []  # nothing half-written
