"""The fork round trip says OK only when it is true: each case here was an OK (or silence) over a false state.

Real parts throughout: tinyup's releases (tests/fork/tinyup.py) from a real local index, real git, the
forklift command line in a child process. Ctrl-C is injected at a named point of a step
(FORKLIFT_INTERRUPT_AT, an event, not a time), so each interrupt lands in the same place every run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.fork.tinyup import CORE, UTIL, TinyUp, core, git, served


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    with served(tmp_path_factory.mktemp("tinyup")) as served_up:
        yield served_up


def ok(proc) -> str:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def edit_core(fork: Path, line: int, text: str, message: str) -> None:
    """The user's own commit on the checked-out branch, as they make one."""
    current = (fork / CORE).read_text().splitlines(keepends=True)
    current[2 * line + 1] = f"    return {text!r}\n"
    (fork / CORE).write_text("".join(current))
    git(fork, "commit", "-q", "-am", message)


def started(up: TinyUp, tmp_path: Path, *lines: int) -> tuple[Path, Path]:
    """A distribution on tinyup 1.0 and its fork (branch work checked out) with one exported commit per line."""
    dist, fork = up.distribution(tmp_path / "dist"), tmp_path / "fork"
    ok(up.forklift(dist, "import", "--branch", "work", "--repo", fork))
    for line in lines:
        edit_core(fork, line, f"patched {line}", f"Patch line {line}")
    if lines:
        ok(up.forklift(dist, "export", "--from", "work", "--repo", fork))
    return dist, fork


def state(dist: Path) -> dict[str, bytes]:
    return {str(p.relative_to(dist)): p.read_bytes() for p in sorted(dist.rglob("*")) if p.is_file()}


def test_import_force_onto_the_checked_out_branch_moves_its_index_and_files(up, tmp_path):
    dist, fork = started(up, tmp_path, 10)
    patch = next((dist / "patches").glob("*.patch"))
    patch.write_text(patch.read_text().replace("'patched 10'", "'edited 10'"))
    ok(up.forklift(dist, "import", "--branch", "work", "--repo", fork, "--force"))
    assert git(fork, "status", "--porcelain") == ""  # nothing staged back to the old tree
    assert "return 'edited 10'" in (fork / CORE).read_text()
    (fork / CORE).write_text("my uncommitted work\n")
    refused = up.forklift(dist, "import", "--branch", "work", "--repo", fork, "--force")
    assert refused.returncode == 1
    assert "is checked out there with uncommitted changes" in refused.stderr
    assert (fork / CORE).read_text() == "my uncommitted work\n"


def test_after_flip_write_the_fork_follows_with_rebase(up, tmp_path):
    dist, fork = started(up, tmp_path, 10, 20)
    flipped = ok(up.forklift(dist, "flip", "1.1", "--write", "--repo", fork))
    assert f"move each with `forklift rebase 1.1 --repo {fork} --branch BRANCH`" in flipped
    stale = up.forklift(dist, "export", "--from", "work", "--repo", fork, "--check")
    assert stale.returncode == 1 and "is not on the pinned release 1.1" in stale.stderr
    replay = up.forklift(dist, "replay", "--against", "work", "--repo", fork)
    assert replay.returncode == 1 and "rebase 1.1" in replay.stdout and "differing files" not in replay.stdout
    ok(up.forklift(dist, "rebase", "1.1", "--repo", fork, "--branch", "work"))
    ok(up.forklift(dist, "export", "--from", "work", "--repo", fork))
    ok(up.forklift(dist, "export", "--from", "work", "--repo", fork, "--check"))
    ok(up.forklift(dist, "replay", "--against", "work", "--repo", fork))
    assert (fork / CORE).read_text() == core(
        "1.1", {10: "def f10():\n    return 'patched 10'\n"} | {20: "def f20():\n    return 'patched 20'\n"}
    )


def test_flip_write_moves_an_empty_series_and_the_fork_can_follow(up, tmp_path):
    dist, fork = started(up, tmp_path)
    ok(up.forklift(dist, "flip", "1.1", "--write", "--repo", fork))
    assert 'version = "1.1"' in (dist / "forklift.toml").read_text()
    behind = up.forklift(dist, "rebase", "1.1", "--repo", fork, "--branch", "work")
    assert behind.returncode == 2 and f"import --branch work --repo {fork} --force" in behind.stderr
    ok(up.forklift(dist, "import", "--branch", "work", "--repo", fork, "--force"))
    edit_core(fork, 10, "patched 10", "Patch line 10")
    ok(up.forklift(dist, "export", "--from", "work", "--repo", fork))
    ok(up.forklift(dist, "replay", "--against", "work", "--repo", fork))
    ok(up.forklift(dist, "flip", "1.2", "--write", "--repo", fork))  # and with a commit, rebase follows
    ok(up.forklift(dist, "rebase", "1.2", "--repo", fork, "--branch", "work"))
    ok(up.forklift(dist, "export", "--from", "work", "--repo", fork))
    ok(up.forklift(dist, "export", "--from", "work", "--repo", fork, "--check"))
    ok(up.forklift(dist, "replay", "--against", "work", "--repo", fork))


def test_rebase_of_a_branch_without_commits_leaves_no_pending_move(up, tmp_path):
    dist, fork = started(up, tmp_path)
    refused = up.forklift(dist, "rebase", "1.1", "--repo", fork, "--branch", "work")
    assert refused.returncode == 2 and "no commits on the base" in refused.stderr
    assert not (fork / ".git" / "forklift-rebase.json").exists()


def test_ctrl_c_in_an_import_that_starts_a_fork_removes_it(up, tmp_path):
    dist, fork = up.distribution(tmp_path / "dist"), tmp_path / "fork"
    cut = up.forklift(dist, "import", "--branch", "work", "--repo", fork, env_at="import.created")
    assert cut.returncode == 130 and "was removed again" in cut.stderr
    assert not fork.exists()
    ok(up.forklift(dist, "import", "--branch", "work", "--repo", fork))  # the same command now succeeds


def test_a_patch_that_does_not_apply_leaves_no_fork(up, tmp_path):
    dist, _ = started(up, tmp_path, 10)
    patch = next((dist / "patches").glob("*.patch"))
    patch.write_text(patch.read_text().replace("-    return 10", "-    return 'not upstream'"))
    other = tmp_path / "other"
    failed = up.forklift(dist, "import", "--branch", "work", "--repo", other)
    assert failed.returncode == 1 and "does not apply" in failed.stderr
    assert not other.exists()


def test_ctrl_c_in_export_after_a_rebase_keeps_the_series_and_the_pin_together(up, tmp_path):
    dist, fork = started(up, tmp_path, 10)
    ok(up.forklift(dist, "rebase", "1.1", "--repo", fork, "--branch", "work"))
    before = state(dist)
    for point in ("export.series", "export.pin"):
        cut = up.forklift(dist, "export", "--from", "work", "--repo", fork, env_at=point)
        assert cut.returncode == 130 and "export again finishes it" in cut.stderr, cut.stderr
        assert state(dist) == before
    ok(up.forklift(dist, "export", "--from", "work", "--repo", fork))
    assert 'version = "1.1"' in (dist / "forklift.toml").read_text()
    ok(up.forklift(dist, "check"))


def test_ctrl_c_in_rebase_gives_the_rebase_up(up, tmp_path):
    dist, fork = started(up, tmp_path, 10)
    tip = git(fork, "rev-parse", "work")
    cut = up.forklift(dist, "rebase", "1.1", "--repo", fork, "--branch", "work", env_at="rebase.git")
    assert cut.returncode == 130 and "is back at" in cut.stderr
    assert git(fork, "rev-parse", "work") == tip and git(fork, "status", "--porcelain") == ""
    assert not (fork / ".git" / "rebase-merge").exists() and not (fork / ".git" / "forklift-rebase.json").exists()


def test_source_verify_proves_the_bound_commit_holds_the_series(up, tmp_path):
    dist, fork = started(up, tmp_path, 10)
    git(fork, "branch", "published")
    ok(up.forklift(dist, "source", "bind", "work", "--branch", "published", "--repo", fork))
    assert "holds exactly the series" in ok(up.forklift(dist, "source", "verify", "--repo", fork))
    edit_core(fork, 20, "not in the series", "A commit nobody exported")
    git(fork, "branch", "-f", "published")
    refused = up.forklift(dist, "source", "bind", "work", "--branch", "published", "--repo", fork)
    assert refused.returncode == 1 and "not-identical" in refused.stdout
    bound = (dist / "SOURCE").read_text()
    (dist / "SOURCE").write_text(bound.replace(bound.split('"')[1], git(fork, "rev-parse", "work").strip()))
    proc = up.forklift(dist, "source", "verify", "--repo", fork)  # SOURCE moved on by hand
    assert proc.returncode == 1
    assert "not-identical: the series applied to tinyup 1.0 sdist differs from fork commit" in proc.stdout
    assert f"{CORE}: content differs" in proc.stdout


def test_a_patch_deleting_an_upstream_file_is_a_finding_unless_its_header_says_so(up, tmp_path):
    dist, fork = started(up, tmp_path)
    git(fork, "rm", "-q", UTIL)
    git(fork, "commit", "-q", "-m", "Drop util.py")
    ok(up.forklift(dist, "export", "--from", "work", "--repo", fork))
    proc = up.forklift(dist, "check")
    assert proc.returncode == 1
    assert f"deletes the upstream file {UTIL}: if that is intended, say `Deletes: {UTIL}`" in proc.stdout
    patch = next((dist / "patches").glob("*.patch"))
    patch.write_text(patch.read_text().replace("Author:", f"Deletes: {UTIL}\nAuthor:", 1))
    ok(up.forklift(dist, "check"))


def test_manifest_without_a_manifest_is_not_ok(up, tmp_path):
    dist, _ = started(up, tmp_path, 10)
    proc = up.forklift(dist, "manifest")
    assert proc.returncode == 1 and "MANIFEST.toml does not exist: nothing is checked" in proc.stdout
    ok(up.forklift(dist, "manifest", "--write"))
    assert "the series carries everything the manifest requires" in ok(up.forklift(dist, "manifest"))


def test_the_ci_templates_source_job_runs_source_verify(up, tmp_path):
    """examples/ci's `source` job, its own `run:` steps as GitHub runs them, on a clone of a real fork."""
    from tests.flip.test_ci_template import run_job

    dist, fork = started(up, tmp_path, 10)
    git(fork, "branch", "published")
    git(fork, "update-ref", "refs/remotes/origin/published", "published")  # what a clone of the fork will see
    ok(up.forklift(dist, "source", "bind", "work", "--branch", "origin/published", "--repo", fork))
    env = {**{k: v for k, v in up.env.items() if v is not None}, "FORKLIFT_FORK_URL": str(fork)}
    codes, _ = run_job("source", dist, tmp_path, env)
    assert codes == [0, 0]
    edit_core(fork, 20, "not exported", "A commit nobody exported")
    git(fork, "branch", "-f", "published")
    git(fork, "update-ref", "refs/remotes/origin/published", "published")
    bound = (dist / "SOURCE").read_text()
    (dist / "SOURCE").write_text(bound.replace(bound.split('"')[1], git(fork, "rev-parse", "work").strip()))
    shutil.rmtree(dist / "ci-fork")
    codes, _ = run_job("source", dist, tmp_path, env)
    assert codes == [0, 1]  # the commit is published and descends from the pin, but is not the series


def test_ctrl_c_in_export_puts_back_a_patch_it_removed_from_a_subfolder(up, tmp_path):
    dist, fork = started(up, tmp_path, 10)
    patches = dist / "patches"
    (patches / "old").mkdir()
    (patches / "old" / "kept.patch").write_text(next(patches.glob("*.patch")).read_text())
    series = (patches / "series").read_text()
    (patches / "series").write_text(series + "old/kept.patch\n")
    before = state(dist)
    cut = up.forklift(dist, "export", "--from", "work", "--repo", fork, env_at="export.series")
    assert cut.returncode == 130, cut.stderr
    assert state(dist) == before  # export had removed old/kept.patch (not on the branch): it is back


def test_export_after_a_rebase_given_up_follows_the_pin(up, tmp_path):
    dist, fork = started(up, tmp_path, 3)  # the line upstream rewrites in 1.1: the rebase conflicts
    conflict = up.forklift(dist, "rebase", "1.1", "--repo", fork, "--branch", "work")
    assert conflict.returncode == 1 and "conflict in" in conflict.stdout
    git(fork, "rebase", "--abort")
    exported = ok(up.forklift(dist, "export", "--from", "work", "--repo", fork))
    assert "the rebase onto 1.1 was given up" in exported
    assert not (fork / ".git" / "forklift-rebase.json").exists()
    ok(up.forklift(dist, "export", "--from", "work", "--repo", fork, "--check"))
    ok(up.forklift(dist, "replay", "--against", "work", "--repo", fork))
    assert 'version = "1.0"' in (dist / "forklift.toml").read_text()
