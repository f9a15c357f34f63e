"""First use and moving across a release: import of an empty series, import -> export byte identity for
git format-patch and hand-written patches, NNNN- numbering, the base line checks, and `forklift rebase`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from forklift.fork.export import recorded_base
from forklift.series.model import load_series
from tests.cli import forklift
from tests.fork.fixtures import ENVS, LOGGER, MEDUSA
from tests.fork.gitfork import commit, edit

pytestmark = pytest.mark.network

AS_IMPORTED = {"NAME": "forklift", "EMAIL": "forklift@localhost"}  # import's author for a header naming none


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def series_of(dist: Path, names: list[str]) -> None:
    (dist / "patches" / "series").write_text("".join(f"{name}\n" for name in names))


def files(dist: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (dist / "patches").iterdir() if p.name != "series"}


def test_format_patch_series_round_trips_byte_for_byte(vllm_fork, distribution, tmp_path):
    out = tmp_path / "mail"
    git("-C", str(vllm_fork.git.repo), "format-patch", "-q", "-o", str(out), f"{vllm_fork.base}..patched")
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == 4 and names[0].startswith("0001-")
    for name in names:
        (distribution / "patches" / name).write_bytes((out / name).read_bytes())
    series_of(distribution, names)
    before = files(distribution)
    repo = str(vllm_fork.git.repo)
    proc = forklift("-c", str(distribution), "import", "--branch", "rt-mail", "--repo", repo, "--base", vllm_fork.base)
    assert proc.returncode == 0, proc.stderr
    proc = forklift("-c", str(distribution), "export", "--from", "rt-mail", "--repo", repo, "--base", vllm_fork.base)
    assert proc.returncode == 0, proc.stderr
    assert files(distribution) == before  # index lines, function context, mail headers: all as git wrote them
    check = forklift("-c", str(distribution), "export", "--from", "rt-mail", "--repo", repo, "--check")
    assert check.returncode == 0, check.stdout


def test_hand_written_header_is_normalised_once_then_stable(vllm_fork, distribution, vllm_032_tree):
    """A header of free text only: export words it as DEP-3 (an Author field), says so once, then is stable."""
    diff = forklift("-c", str(distribution), "export", "--from", "patched", "--repo", str(vllm_fork.git.repo))
    assert diff.returncode == 0, diff.stderr
    first = load_series(distribution / "patches").patches[3]
    body = first.text[first.text.index("diff --git") :]
    patches = distribution / "patches"
    for p in list(patches.iterdir()):
        p.unlink()
    (patches / "assets-docs.patch").write_text("Document the assets cache folder.\n\n" + body)
    series_of(distribution, ["assets-docs.patch"])
    repo = str(vllm_fork.git.repo)
    base = ("--base", vllm_fork.base)
    assert forklift("-c", str(distribution), "import", "--branch", "rt-hand", "--repo", repo, *base).returncode == 0
    check = forklift("-c", str(distribution), "export", "--from", "rt-hand", "--repo", repo, *base, "--check")
    assert check.returncode == 1
    assert "assets-docs.patch: same change, but export normalises its header author" in check.stdout
    command = f"forklift -c {distribution} export --from rt-hand --repo {repo}"
    assert f"run `{command}` and commit" in check.stdout  # the hint is the whole command
    written = forklift("-c", str(distribution), "export", "--from", "rt-hand", "--repo", repo, *base)
    assert "normalised its header author" in written.stdout
    again = forklift("-c", str(distribution), "export", "--from", "rt-hand", "--repo", repo, "--check")
    assert again.returncode == 0, again.stdout
    # a commit without a Patch-Name continues the numbering after the series' highest NNNN-
    (patches / "assets-docs.patch").rename(patches / "0007-assets-docs.patch")
    series_of(distribution, ["0007-assets-docs.patch"])
    tip = vllm_fork.git.commit_of("rt-hand")
    text = (patches / "0007-assets-docs.patch").read_text()
    message = vllm_fork.git.text("log", "-1", "--format=%B", tip).replace("assets-docs.patch", "0007-assets-docs.patch")
    who = {f"GIT_{role}_{key}": value for role in ("AUTHOR", "COMMITTER") for key, value in AS_IMPORTED.items()}
    renamed = vllm_fork.git.text("commit-tree", f"{tip}^{{tree}}", "-p", f"{tip}^", "-m", message, env=who).strip()
    extra = commit(
        vllm_fork.git,
        renamed,
        {LOGGER: edit(vllm_032_tree.path, LOGGER, "_DATE_FORMAT = ", "_DATE_FORMAT: str = ")},
        "Annotate the date format\n",
    )
    proc = forklift("-c", str(distribution), "export", "--from", extra, "--repo", repo, *base)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in load_series(patches).patches] == [
        "0007-assets-docs.patch",
        "0008-annotate-the-date-format.patch",
    ]
    assert (patches / "0007-assets-docs.patch").read_text() == text


def test_import_of_an_empty_series_starts_the_fork(distribution, tmp_path):
    (distribution / "patches" / "series").write_text("# no patches yet\n")
    fork = tmp_path / "new-fork"
    proc = forklift("-c", str(distribution), "import", "--branch", "work", "--repo", str(fork))
    assert proc.returncode == 0, proc.stderr
    base = git("-C", str(fork), "rev-parse", "v0.32.0").strip()
    assert git("-C", str(fork), "rev-parse", "work").strip() == base
    assert f"branch work: 0 commits on {base[:12]}" in proc.stdout


@pytest.fixture
def clone(vllm_fork, tmp_path) -> Path:
    """A working clone of the session fork (rebase needs a checkout), with the `blocked` branch."""
    path = tmp_path / "clone"
    git("clone", "-q", "--shared", str(vllm_fork.git.repo), str(path))
    git("-C", str(path), "branch", "-q", "work", "origin/blocked")
    return path


def test_rebase_stops_on_each_conflict_and_export_moves_everything(vllm_fork, distribution, clone):
    dist = str(distribution)
    assert forklift("-c", dist, "export", "--from", "work", "--repo", str(clone)).returncode == 0
    assert forklift("-c", dist, "manifest", "--write").returncode == 0
    names = [p.name for p in load_series(distribution / "patches").patches]
    proc = forklift("-c", dist, "rebase", "0.33.0", "--repo", str(clone), "--branch", "work")
    assert proc.returncode == 1
    assert f"conflict in {vllm_fork.git.text('rev-parse', 'blocked^').strip()[:12]} Overlap" in proc.stdout
    assert f"{ENVS}" in proc.stdout and f"git -C {clone} rebase --continue" in proc.stdout
    early = forklift("-c", dist, "export", "--from", "work", "--repo", str(clone))
    assert early.returncode == 1 and "the rebase onto 0.33.0 is not finished" in early.stderr
    # the user resolves: drop the knob flip (upstream removed the knob), then the Medusa doc (file deleted)
    skipped = subprocess.run(["git", "-C", str(clone), "rebase", "--skip"], capture_output=True, text=True)
    assert skipped.returncode != 0 and MEDUSA in git("-C", str(clone), "status", "--short")
    git("-C", str(clone), "rebase", "--skip")
    proc = forklift("-c", dist, "export", "--from", "work", "--repo", str(clone))
    assert proc.returncode == 0, proc.stderr
    assert "moved the pin to 0.33.0" in proc.stdout
    toml = (distribution / "forklift.toml").read_text()
    assert 'version = "0.33.0"' in toml and "f4c33c2503d52bb411146afa9618a4f48bed68912f617e6803ac8d76e4c74112" in toml
    new_base = git("-C", str(clone), "rev-parse", "v0.33.0").strip()
    assert recorded_base(distribution / "patches") == new_base
    kept = [p.name for p in load_series(distribution / "patches").patches]
    # git rebase drops the commit 0.33.0 carries (the audio asset) and the two skipped ones
    assert kept == [names[0], names[1], names[3], names[4]]
    manifest = (distribution / "patches" / "MANIFEST.toml").read_text()
    assert ENVS in manifest and MEDUSA not in manifest
    patches_md = (distribution / "PATCHES.md").read_text()
    assert "| 4 |" in patches_md
    for patch in load_series(distribution / "patches").patches:  # each row's export point, from its header
        assert f"| `{patch.header.get('export-commit')[:12]}` |" in patches_md
    replay = forklift("-c", dist, "replay", "--against", "work", "--repo", str(clone))
    assert replay.returncode == 0, replay.stdout
    check = forklift("-c", dist, "check")
    assert check.returncode == 0, check.stdout


def test_a_base_line_of_another_release_is_refused_and_named_first(vllm_fork, distribution, clone):
    dist = str(distribution)
    assert forklift("-c", dist, "export", "--from", "work", "--repo", str(clone)).returncode == 0
    toml = distribution / "forklift.toml"
    old_base = recorded_base(distribution / "patches")
    # the pin moves by hand (or by an old flip --write) while the series still names the 0.32.0 base
    forklift("-c", dist, "rebase", "0.33.0", "--repo", str(clone), "--branch", "work")
    git("-C", str(clone), "rebase", "--abort")
    (Path(git("-C", str(clone), "rev-parse", "--absolute-git-dir").strip()) / "forklift-rebase.json").unlink()
    toml.write_text(
        toml.read_text()
        .replace('version = "0.32.0"', 'version = "0.33.0"')
        .replace(
            "d2c957d5eee3d0985012151315ddc62cbe0cd368fc96a5fc3510438d9dddf2ad",
            "f4c33c2503d52bb411146afa9618a4f48bed68912f617e6803ac8d76e4c74112",
        )
    )
    # the series as a flip would leave it for 0.33.0: the patches that apply there (the base line stays)
    patches = distribution / "patches"
    names = [p.name for p in load_series(patches).patches]
    for name in names[2:3] + names[4:]:
        (patches / name).unlink()
    text = (patches / "series").read_text()
    for name in names[2:3] + names[4:]:
        text = text.replace(name + "\n", "")
    (patches / "series").write_text(text)
    proc = forklift("-c", dist, "import", "--branch", "again", "--repo", str(clone))
    assert proc.returncode == 2
    assert f"the base line names {old_base[:12]} (tagged v0.32.0), but {toml} pins 0.33.0" in proc.stderr
    new_base = git("-C", str(clone), "rev-parse", "v0.33.0").strip()
    assert f"tag v0.33.0 = {new_base[:12]}" in proc.stderr
    replay = forklift("-c", dist, "replay", "--against", "work", "--repo", str(clone))
    assert replay.returncode == 1
    lines = replay.stdout.splitlines()
    assert lines[0].startswith("base mismatch ") and "(tagged v0.32.0)" in lines[0]
    assert sum(line.startswith("differs ") for line in lines) == 20
    assert any(line.startswith("... and ") and line.endswith(" more differing files") for line in lines)
