"""Git pins against real repositories: the tag must still name the pinned commit."""

from __future__ import annotations

import pytest

from forklift.config.schema import GitPin
from forklift.errors import ForkliftError, UnreachableError
from forklift.source.materialize import materialize
from tests.source.helpers import cache_entries, git


@pytest.fixture
def upstream(tmp_path):
    """A repository with two commits on main; v1 (annotated) on the first, v2 (lightweight) on the second."""
    repo = tmp_path / "upstream"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "mod.py").write_text("A = 1\n")
    (repo / ".gitattributes").write_text("pkg/skipped.py export-ignore\n")
    (repo / "pkg" / "skipped.py").write_text("# git archive would drop me\n")
    (repo / "pkg" / "link.py").symlink_to("mod.py")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    git(repo, "tag", "-a", "v1", "-m", "release 1")
    (repo / "pkg" / "mod.py").write_text("A = 2\n")
    git(repo, "commit", "-q", "-am", "two")
    git(repo, "tag", "v2")
    return repo


def pin(repo, tag: str, commit: str) -> GitPin:
    return GitPin(source="git", url=str(repo), tag=tag, commit=commit)


def test_annotated_tag_materializes_the_full_commit_tree(upstream, cache, tmp_path):
    commit = git(upstream, "rev-parse", "v1^{commit}")
    tree = materialize(pin(upstream, "v1", commit), tmp_path, cache)
    assert (tree.kind, tree.digest) == ("git", commit)
    assert (tree.path / "pkg" / "mod.py").read_text() == "A = 1\n"
    assert (tree.path / "pkg" / "skipped.py").exists()  # export-ignore does not hide files from the pin
    assert (tree.path / "pkg" / "link.py").is_symlink()
    assert not (tree.path / ".git").exists()
    assert f"git-{commit}.done" in cache_entries(cache)["trees"]


def test_relative_url_resolves_against_the_config_folder(upstream, cache, tmp_path):
    commit = git(upstream, "rev-parse", "v2")
    tree = materialize(GitPin(source="git", url="upstream", tag="v2", commit=commit), tmp_path, cache)
    assert (tree.path / "pkg" / "mod.py").read_text() == "A = 2\n"


def test_moved_tag(upstream, cache, tmp_path):
    first = git(upstream, "rev-parse", "v2")
    materialize(pin(upstream, "v2", first), tmp_path, cache)  # cached and warm
    (upstream / "pkg" / "mod.py").write_text("A = 3\n")
    git(upstream, "commit", "-q", "-am", "three")
    git(upstream, "tag", "-f", "v2")
    now = git(upstream, "rev-parse", "v2")
    expected = rf"^moved tag: 'v2' at .* now resolves to {now}, forklift.toml pins {first}"
    with pytest.raises(ForkliftError, match=expected):
        materialize(pin(upstream, "v2", first), tmp_path, cache)  # the warm cache does not hide it


def test_commit_not_ancestor_of_tag(upstream, cache, tmp_path):
    pinned = git(upstream, "rev-parse", "v2")
    git(upstream, "checkout", "-q", "-b", "rewritten", "v1^{commit}")
    (upstream / "pkg" / "mod.py").write_text("A = 'rewritten'\n")
    git(upstream, "commit", "-q", "-am", "rewritten two")
    git(upstream, "tag", "-f", "v2")  # v2 now on a history that does not contain the pinned commit
    with pytest.raises(ForkliftError, match=rf"^commit {pinned} is not an ancestor of tag 'v2' at "):
        materialize(pin(upstream, "v2", pinned), tmp_path, cache)


def test_missing_commit(upstream, cache, tmp_path):
    ghost = "0123456789abcdef0123456789abcdef01234567"
    with pytest.raises(ForkliftError, match=rf"^commit {ghost} is missing from .*upstream \(pinned for tag 'v1'\)$"):
        materialize(pin(upstream, "v1", ghost), tmp_path, cache)
    assert [n for n in cache_entries(cache)["trees"]] == []


def test_missing_tag(upstream, cache, tmp_path):
    commit = git(upstream, "rev-parse", "v2")
    with pytest.raises(ForkliftError, match=r"^tag 'v9' not found at "):
        materialize(pin(upstream, "v9", commit), tmp_path, cache)


def test_unreachable_repository(cache, tmp_path):
    with pytest.raises(UnreachableError, match=r"^cannot reach the git repository .*/nowhere: ") as caught:
        materialize(pin(tmp_path / "nowhere", "v1", "1" * 40), tmp_path, cache)
    assert "\n" not in str(caught.value)


def test_symlink_escaping_a_commit_is_refused(tmp_path, cache):
    repo = tmp_path / "evil"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "out").symlink_to("../../etc")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "escape")
    git(repo, "tag", "v1")
    with pytest.raises(ForkliftError, match=r"^unsafe git tree .* v1 @ \w{12}: member 'out' is a symlink escaping"):
        materialize(pin(repo, "v1", git(repo, "rev-parse", "v1")), tmp_path, cache)
    assert cache_entries(cache)["trees"] == []
