"""The fork round trip as a state machine: any order of the user's steps keeps every claim forklift makes.

Hypothesis drives a distribution on tinyup (tests/fork/tinyup.py: three real releases on a real local
index) and its git fork through the steps a maintainer takes: commit on the branch, export, import
--force, flip --write, rebase, replay, check, source bind and verify; any step may be cut by Ctrl-C at one
of its named points (FORKLIFT_INTERRUPT_AT, an event, not a time). After every step:
- a step that did not succeed (an error, a refusal, Ctrl-C) changed no file of the distribution and no
  branch of the fork, and said why in one line (exit 130 for Ctrl-C);
- no step leaves staged or unstaged changes in the fork, or a git rebase in progress;
- the pin, the series' base line and the fork's release tag name one release;
- no patch reverts upstream's own change between releases;
- whenever forklift says OK about the fork (export --check, source verify), the series applied to the
  pin is the fork branch's tree (replay) and `check` passes.
CI runs a few short walks (about 15 s); scripts/fuzz runs many long ones.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from tests.fork.tinyup import CORE, VERSIONS, TinyUp, git, served

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
WALKS = int(os.environ.get("FORKLIFT_FUZZ_EXAMPLES", "10000")) // 100 if LONG else 2
STEPS = 20 if LONG else 6
EDITABLE = range(6, 30)  # core.py lines upstream never changes, two away from the ones it does (3, 33)
UPSTREAM_ONLY = re.compile(r"'three'|'thirty-three'|__version__|EXTRA|Version: 1\.")  # release diff lines


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    with served(tmp_path_factory.mktemp("tinyup")) as served_up:
        yield served_up


class ForkModel(RuleBasedStateMachine):
    up: TinyUp

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="forklift-model-"))
        self.dist = self.up.distribution(self.root / "dist")
        self.fork = self.root / "fork"
        self.version = VERSIONS[0]
        self.edits = 0
        self.ok(self.run("import", "--branch", "work", "--repo", self.fork))

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    # -- driving forklift -------------------------------------------------------------------------------

    def run(self, *args: object, at: str | None = None):
        return self.up.forklift(self.dist, *args, env_at=at)

    def ok(self, proc) -> str:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    def snapshot(self) -> tuple[dict[str, bytes], str, bool]:
        files = {str(p.relative_to(self.dist)): p.read_bytes() for p in self.dist.rglob("*") if p.is_file()}
        heads = git(self.fork, "for-each-ref", "refs/heads")
        return files, heads, (self.fork / ".git" / "forklift-rebase.json").exists()

    def step(self, *args: object, at: str | None = None):
        """Run a step that writes; a step that does not succeed must leave everything as it was. A rebase that
        stops on a conflict is the exception git makes: the user gives it up (`git rebase --abort`), which puts
        the branch back; forklift's record of the move stays until the next export or rebase."""
        before = self.snapshot()
        proc = self.run(*args, at=at)
        if args[0] == "rebase" and proc.returncode == 1 and "conflict in" in proc.stdout:
            git(self.fork, "rebase", "--abort")
            assert self.snapshot()[:2] == before[:2]
            return proc
        if proc.returncode == 130:
            assert at is not None and proc.stderr.startswith("interrupted: "), proc.stderr
        if proc.returncode != 0:
            assert self.snapshot() == before, f"{args} failed but changed something: {proc.stderr}"
            said = proc.stderr.strip().splitlines()  # an error is one line; a finding (drift) is a report
            assert len(said) == 1 if said else proc.stdout.strip(), proc.stdout + proc.stderr
        return proc

    # -- the user's steps --------------------------------------------------------------------------------

    @rule(line=st.sampled_from(EDITABLE))
    def commit(self, line: int) -> None:
        self.edits += 1
        text = (self.fork / CORE).read_text().splitlines(keepends=True)
        text[2 * line + 1] = f"    return 'edit {self.edits}'\n"
        (self.fork / CORE).write_text("".join(text))
        git(self.fork, "commit", "-q", "-am", f"Edit {self.edits} on line {line}")

    @precondition(lambda self: self.version == VERSIONS[0])
    @rule()
    def commit_on_upstreams_line(self) -> None:
        """An edit of the line upstream rewrites in 1.1: a flip is blocked and a rebase stops on a conflict."""
        self.edits += 1
        text = (self.fork / CORE).read_text().replace("    return 3\n", f"    return 'edit {self.edits}'\n")
        (self.fork / CORE).write_text(text)
        git(self.fork, "commit", "-q", "-am", f"Edit {self.edits} on upstream's line", "--allow-empty")

    @rule(at=st.sampled_from([None, "export.series", "export.pin"]))
    def export(self, at: str | None) -> None:
        if self.step("export", "--from", "work", "--repo", self.fork, at=at).returncode == 0:
            self.claims_hold()

    @rule(at=st.sampled_from([None, "import.patch", "import.branch"]))
    def import_force(self, at: str | None) -> None:
        self.step("import", "--branch", "work", "--repo", self.fork, "--force", at=at)

    @rule(version=st.sampled_from(VERSIONS), at=st.sampled_from([None, "flip.pin"]))
    def flip_write(self, version: str, at: str | None) -> None:
        if self.step("flip", version, "--write", "--repo", self.fork, at=at).returncode == 0:
            self.version = version

    @rule(version=st.sampled_from(VERSIONS), at=st.sampled_from([None, "rebase.git"]))
    def rebase(self, version: str, at: str | None) -> None:
        self.step("rebase", version, "--repo", self.fork, "--branch", "work", at=at)

    @rule()
    def check_export(self) -> None:
        if self.step("export", "--from", "work", "--repo", self.fork, "--check").returncode == 0:
            self.claims_hold()

    @rule()
    def bind_and_verify(self) -> None:
        git(self.fork, "branch", "-f", "published", "work")
        if self.step("source", "bind", "work", "--branch", "published", "--repo", self.fork).returncode != 0:
            return
        if self.step("source", "verify", "--repo", self.fork).returncode == 0:
            self.claims_hold()

    def claims_hold(self) -> None:
        """forklift said the fork branch is the series: the series on the pin must be its tree, and pass check
        (a series of no patches is its base; check has nothing to check then)."""
        self.ok(self.run("replay", "--against", "work", "--repo", self.fork))
        if list((self.dist / "patches").glob("*.patch")):
            self.ok(self.run("check"))

    # -- after every step --------------------------------------------------------------------------------

    @invariant()
    def fork_is_clean(self) -> None:
        assert git(self.fork, "status", "--porcelain", "--untracked-files=no") == ""
        assert not (self.fork / ".git" / "rebase-merge").exists()
        assert not (self.fork / ".git" / "rebase-apply").exists()

    @invariant()
    def one_release(self) -> None:
        toml = (self.dist / "forklift.toml").read_text()
        assert f'version = "{self.version}"' in toml
        pinned = git(self.fork, "rev-parse", f"v{self.version}^{{commit}}").strip()  # the fork can follow the pin
        series = (self.dist / "patches" / "series").read_text()
        base = re.search(r"^# forklift-base: ([0-9a-f]{40})$", series, re.MULTILINE)
        if base:
            assert pinned == base.group(1)

    @invariant()
    def no_patch_reverts_upstream(self) -> None:
        for patch in (self.dist / "patches").glob("*.patch"):
            changed = [line for line in patch.read_text().splitlines() if line[:1] in "+-"]
            assert not [line for line in changed if UPSTREAM_ONLY.search(line)], patch.name


def test_the_fork_round_trip_keeps_every_claim(up):
    ForkModel.up = up
    run_state_machine_as_test(
        ForkModel,
        settings=settings(
            max_examples=WALKS,
            stateful_step_count=STEPS,
            deadline=None,
            database=None,
            # a failing walk of a few steps reads as it is; shrinking one costs minutes of CLI calls
            phases=list(Phase) if LONG else [Phase.explicit, Phase.generate],
        ),
    )
