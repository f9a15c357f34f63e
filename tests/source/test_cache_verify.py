"""Cache integrity: a cached tree edited after extraction is caught by `cache verify` and by --verify-cache/CI."""

from __future__ import annotations

import hashlib

from forklift.config.schema import PathPin
from forklift.source.cache import Cache
from forklift.source.materialize import materialize
from tests.cli import forklift
from tests.source.helpers import sdist_bytes


def fetched(tmp_path):
    data = sdist_bytes()
    (tmp_path / "up.tar.gz").write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    (tmp_path / "forklift.toml").write_text(f'[upstream]\nsource = "path"\npath = "up.tar.gz"\nsha256 = "{sha}"\n')
    cache = Cache(tmp_path / "cache")
    tree = materialize(PathPin(source="path", path="up.tar.gz", sha256=sha), tmp_path, cache)
    return cache, tree, {"FORKLIFT_CACHE": str(cache.root), "CI": ""}


def test_cache_verify_removes_an_edited_tree_and_keeps_a_pristine_one(tmp_path):
    cache, tree, env = fetched(tmp_path)
    done = forklift("cache", "verify", cwd=tmp_path, env=env)
    assert done.returncode == 0 and f"ok {tree.path.name}" in done.stdout
    (tree.path / "pkg" / "__init__.py").write_text("VALUE = 'tampered'\n")  # the marker stays
    done = forklift("cache", "verify", cwd=tmp_path, env=env)
    assert done.returncode == 1
    assert f"removed {tree.path.name}: changed after extraction" in done.stdout
    assert done.stderr.strip() == "error: 1 cached tree(s) had changed and were removed; the next fetch rebuilds them"
    assert not tree.path.exists() and cache.cached_tree(tree.path.name) is None


def test_without_verification_an_edited_tree_is_used_as_is(tmp_path):
    """The cost of trusting the marker: the warm path does not re-hash (this is what --verify-cache adds)."""
    cache, tree, _ = fetched(tmp_path)
    (tree.path / "pkg" / "__init__.py").write_text("VALUE = 'tampered'\n")
    again = materialize(PathPin(source="path", path="up.tar.gz", sha256=tree.digest), tmp_path, cache)
    assert (again.path / "pkg" / "__init__.py").read_text() == "VALUE = 'tampered'\n"


def test_ci_mode_rebuilds_an_edited_tree_before_trusting_it(tmp_path):
    _, tree, env = fetched(tmp_path)
    (tree.path / "pkg" / "__init__.py").write_text("VALUE = 'tampered'\n")
    (tree.path / "extra.py").write_text("planted\n")
    for how in ({"CI": "true"}, {"FORKLIFT_VERIFY_CACHE": "1"}):
        if not (tree.path / "extra.py").exists():
            (tree.path / "extra.py").write_text("planted\n")
        done = forklift("fetch", cwd=tmp_path, env={**env, **how})
        assert done.returncode == 0, done.stderr
        assert "changed after extraction" in done.stderr and "removed it, rebuilding" in done.stderr
        assert (tree.path / "pkg" / "__init__.py").read_text() == "VALUE = 1\n"
        assert not (tree.path / "extra.py").exists()


def test_check_verify_cache_flag_rebuilds_an_edited_tree(tmp_path):
    _, tree, env = fetched(tmp_path)
    (tmp_path / "patches").mkdir()
    (tmp_path / "patches" / "series").write_text("one.patch\n")
    (tmp_path / "patches" / "one.patch").write_text(
        "--- a/pkg/__init__.py\n+++ b/pkg/__init__.py\n@@ -1 +1 @@\n-VALUE = 1\n+VALUE = 2\n"
    )
    (tree.path / "pkg" / "__init__.py").write_text("VALUE = 'tampered'\n")
    done = forklift("check", "--verify-cache", cwd=tmp_path, env=env)
    assert "changed after extraction" in done.stderr
    assert "1/1 exact" in done.stdout  # the patch met the rebuilt pristine tree, not the tampered one
    assert (tree.path / "pkg" / "__init__.py").read_text() == "VALUE = 1\n"
