"""forklift export / import on a throwaway fork of the real vLLM 0.32.0 tree."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest

from forklift.fork.export import recorded_base
from forklift.fork.repo import Git
from forklift.fsio import tree_reader
from forklift.series.apply import apply_series
from forklift.series.model import load_series
from forklift.source.cache import default_cache
from tests.cli import FORKLIFT, forklift
from tests.fixtures.pypi import VLLM_032
from tests.fork.fixtures import ASSETS_BASE, AUDIO, FIX_LINE, LOGGER, SCHEDULER, VLLM_032_TOML
from tests.fork.gitfork import branch, commit, edit

pytestmark = pytest.mark.network

NAMES = [  # new patches are numbered as git format-patch numbers them, continuing the series
    "0001-clear-speculative-drafts-for-requests-with-structure.patch",
    "0002-register-the-vllm_log_kv_cache_blocks-knob.patch",
    "0003-add-the-azacinto_foscolo-audio-asset.patch",
    "0004-document-that-the-assets-cache-folder-is-created-on.patch",
]


def export(dist: Path, fork, ref: str, *extra: str):
    return forklift("-c", str(dist), "export", "--from", ref, "--repo", str(fork.git.repo), *extra)


def patch_files(dist: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((dist / "patches").iterdir())}


def test_export_writes_one_normalized_patch_per_commit(vllm_fork, distribution, vllm_032_tree):
    proc = export(distribution, vllm_fork, "patched", "--base", vllm_fork.base)
    assert proc.returncode == 0, proc.stderr
    series = load_series(distribution / "patches")
    assert [p.name for p in series.patches] == NAMES
    assert recorded_base(distribution / "patches") == vllm_fork.base
    first = series.patches[0]
    assert first.header.get("author") == "Ann Maintainer <ann@example.org>"
    assert first.header.get("origin") == "vendor"
    assert first.header.get("kind") == "fix"
    assert first.header.get("retires-when") == "upstream stops drafting for structured-output requests"
    assert first.header.description == "Clear speculative drafts for requests with structured outputs"
    assert "plain target-token path" in first.header.get("description")
    for patch, commit_id in zip(series.patches, vllm_fork.commits, strict=True):
        assert patch.header.get("export-commit") == commit_id
        assert "\nindex " not in patch.text and "2026" not in patch.text  # no index lines, no dates
        assert not patch.text.rstrip().endswith(("2.39.5", "--"))  # no format-patch version trailer
    assert [p.paths for p in series.patches] == [(SCHEDULER,), ("vllm/envs.py",), (AUDIO,), ("vllm/assets/base.py",)]
    results, _ = apply_series(tree_reader(vllm_032_tree.path), series.patches, series.applier)
    assert [r.status for r in results] == ["exact"] * 4


def test_reexport_is_byte_identical_and_check_passes(vllm_fork, distribution):
    assert export(distribution, vllm_fork, "patched", "--base", vllm_fork.base).returncode == 0
    first = patch_files(distribution)
    proc = export(distribution, vllm_fork, vllm_fork.patched)  # base now read back from patches/series
    assert proc.returncode == 0, proc.stderr
    assert patch_files(distribution) == first
    proc = export(distribution, vllm_fork, "patched", "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 patches match a fresh export" in proc.stdout


def test_export_check_names_each_drifted_patch(vllm_fork, distribution):
    assert export(distribution, vllm_fork, "patched", "--base", vllm_fork.base).returncode == 0
    patches = distribution / "patches"
    edited = patches / NAMES[1]
    edited.write_text(edited.read_text().replace("Kind: feature", "Kind: fix"))
    series = patches / "series"
    series.write_text(series.read_text().replace(NAMES[3] + "\n", ""))
    (patches / NAMES[3]).unlink()
    proc = export(distribution, vllm_fork, "patched", "--check")
    assert proc.returncode == 1
    assert f"{NAMES[1]}: differs from a fresh export of fork commit {vllm_fork.commits[1][:12]}" in proc.stdout
    assert f"{NAMES[3]}: missing from the committed series" in proc.stdout
    assert NAMES[0] not in proc.stdout


def test_export_refuses_a_merge_commit(vllm_fork, distribution, vllm_032_tree):
    side = commit(
        vllm_fork.git,
        vllm_fork.base,
        {LOGGER: edit(vllm_032_tree.path, LOGGER, "_DATE_FORMAT = ", "_DATE_FORMAT: str = ")},
        "Annotate the date format constant\n",
    )
    merge = commit(vllm_fork.git, [vllm_fork.patched, side], {}, "Merge branch 'side'\n")
    branch(vllm_fork.git, "merged", merge)
    proc = export(distribution, vllm_fork, "merged", "--base", vllm_fork.base)
    assert proc.returncode == 1
    assert f"error: commit {merge[:12]} (Merge branch 'side') is a merge commit" in proc.stderr
    assert "rebase the fork branch" in proc.stderr
    assert not (distribution / "patches" / "series").exists()  # nothing half-written


def test_export_refuses_an_empty_commit(vllm_fork, distribution):
    empty = commit(vllm_fork.git, vllm_fork.patched, {}, "Bump nothing\n")
    proc = export(distribution, vllm_fork, empty, "--base", vllm_fork.base)
    assert proc.returncode == 1
    assert f"error: commit {empty[:12]} (Bump nothing) is empty: it changes no file's content" in proc.stderr


def test_export_reports_files_outside_upstreams_tree(vllm_fork, distribution, vllm_032_tree):
    ci = commit(
        vllm_fork.git,
        vllm_fork.patched,
        {
            ".forgejo/workflows/fork-ci.yml": b"on: push\n",
            LOGGER: edit(vllm_032_tree.path, LOGGER, "_DATE_FORMAT = ", "_DATE_FORMAT: str = "),
        },
        "Fork CI and a logger annotation\n",
    )
    proc = export(distribution, vllm_fork, ci, "--base", vllm_fork.base)
    assert proc.returncode == 1
    assert "touches files outside upstream's tree: .forgejo/workflows/fork-ci.yml" in proc.stderr
    proc = export(distribution, vllm_fork, ci, "--base", vllm_fork.base, "--drop-outside")
    assert proc.returncode == 0, proc.stderr
    assert "dropped .forgejo/workflows/fork-ci.yml" in proc.stdout
    last = load_series(distribution / "patches").patches[-1]
    assert last.paths == (LOGGER,)


def test_export_finds_the_base_by_release_tag_or_needs_it(vllm_fork, distribution, tmp_path):
    proc = export(distribution, vllm_fork, "patched")  # the fork tags its base v0.32.0, as vLLM does
    assert proc.returncode == 0, proc.stderr
    assert recorded_base(distribution / "patches") == vllm_fork.base
    untagged = tmp_path / "untagged.git"
    subprocess.run(
        ["git", "clone", "-q", "--bare", "--shared", "--no-tags", str(vllm_fork.git.repo), str(untagged)], check=True
    )
    (distribution / "patches" / "series").unlink()
    for patch in (distribution / "patches").glob("*.patch"):
        patch.unlink()
    proc = forklift("-c", str(distribution), "export", "--from", "patched", "--repo", str(untagged))
    assert proc.returncode == 2
    assert "a pypi pin names no commit of the fork: pass --base REV" in proc.stderr


def test_import_into_a_new_folder_starts_the_fork(distribution, vllm_fork, tmp_path):
    assert export(distribution, vllm_fork, "patched", "--base", vllm_fork.base).returncode == 0
    (distribution / "patches" / "series").write_text(
        "\n".join(
            line
            for line in (distribution / "patches" / "series").read_text().splitlines()
            if not line.startswith("# forklift-base")
        )
        + "\n"
    )  # as a hand-kept series would be
    fork = tmp_path / "new-fork"
    proc = forklift("-c", str(distribution), "import", "--branch", "work", "--repo", str(fork))
    assert proc.returncode == 0, proc.stderr
    assert "tagged v0.32.0" in proc.stdout
    assert "azacinto_foscolo" in (fork / "vllm" / "assets" / "audio.py").read_text()  # branch checked out
    proc = forklift("-c", str(distribution), "replay", "--against", "work", "--repo", str(fork))
    assert proc.returncode == 0 and "0 differing files" in proc.stdout, proc.stdout + proc.stderr
    assert "not compared" not in proc.stdout  # the fork holds every file the sdist ships
    proc = forklift("-c", str(distribution), "export", "--from", "work", "--repo", str(fork), "--check")
    # new commits, same changes: the committed patches are kept as they are (Export-Commit included);
    # only the series file lacks the base line a hand-kept series never had
    assert proc.returncode == 1
    assert "drift series: order or base comment differs from a fresh export" in proc.stdout
    assert "differs from a fresh export of fork commit" not in proc.stdout


def test_import_makes_one_commit_per_patch_and_round_trips(vllm_fork, distribution, tmp_path):
    assert export(distribution, vllm_fork, "patched", "--base", vllm_fork.base).returncode == 0
    proc = forklift("-c", str(distribution), "import", "--branch", "editing", "--repo", str(vllm_fork.git.repo))
    assert proc.returncode == 0, proc.stderr
    git = vllm_fork.git
    assert git.text("rev-list", "--count", f"{vllm_fork.base}..editing").strip() == "4"
    assert git.text("rev-parse", "editing^{tree}") == git.text("rev-parse", "patched^{tree}")
    message = git.text("log", "-1", "--format=%an <%ae>%n%B", "editing~3")
    assert message.startswith("Ann Maintainer <ann@example.org>\nClear speculative drafts")
    assert "Retires-When: upstream stops drafting" in message
    again = tmp_path / "again"
    again.mkdir()
    (again / "forklift.toml").write_text((distribution / "forklift.toml").read_text())
    proc = forklift("-c", str(again), "export", "--from", "editing", "--repo", str(git.repo), "--base", vllm_fork.base)
    assert proc.returncode == 0, proc.stderr

    def without_export_commit(folder: Path) -> dict[str, list[str]]:
        return {
            name: [line for line in text.decode().splitlines() if not line.startswith("Export-Commit:")]
            for name, text in patch_files(folder).items()
        }

    assert without_export_commit(again) == without_export_commit(distribution)
    proc = forklift("-c", str(distribution), "import", "--branch", "editing", "--repo", str(git.repo))
    assert proc.returncode == 1 and "branch 'editing' already exists" in proc.stderr


def test_import_names_the_patch_that_does_not_apply(vllm_fork, distribution):
    assert export(distribution, vllm_fork, "patched", "--base", vllm_fork.base).returncode == 0
    bad = distribution / "patches" / NAMES[2]
    bad.write_text(
        bad.read_text()
        .replace('"mary_had_lamb"]', '"mary_had_a_lamb"]')
        .replace(
            '-AudioAssetName = Literal["winning_call", "mary_had_lamb"',
            '-AudioAssetName = Literal["winning_call", "mary_had_a_lamb"',
        )
    )
    proc = forklift("-c", str(distribution), "import", "--branch", "broken", "--repo", str(vllm_fork.git.repo))
    assert proc.returncode == 1
    assert f"error: {NAMES[2]}: does not apply" in proc.stderr
    assert vllm_fork.git.resolve("refs/heads/broken") is None  # no branch for a half import


def test_fix_line_is_in_the_export(vllm_fork, distribution):
    """The line the manifest tests guard is what the scheduler commit adds."""
    assert export(distribution, vllm_fork, "patched", "--base", vllm_fork.base).returncode == 0
    assert f"+            {FIX_LINE}\n" in (distribution / "patches" / NAMES[0]).read_text()


def test_patch_name_trailer_names_the_file_and_must_be_unique(vllm_fork, distribution, vllm_032_tree):
    named = commit(
        vllm_fork.git,
        vllm_fork.patched,
        {LOGGER: edit(vllm_032_tree.path, LOGGER, "_DATE_FORMAT = ", "_DATE_FORMAT: str = ")},
        "Annotate the date format\n\nPatch-Name: 0005-logger-annotation.patch\n",
    )
    assert export(distribution, vllm_fork, named, "--base", vllm_fork.base).returncode == 0
    last = load_series(distribution / "patches").patches[-1]
    assert last.name == "0005-logger-annotation.patch" and "Patch-Name" not in last.text
    twice = commit(
        vllm_fork.git,
        named,
        {LOGGER: edit(vllm_032_tree.path, LOGGER, "_DATE_FORMAT = ", "_DATE_FORMAT2 = ")},
        "Rename the date format\n\nPatch-Name: 0005-logger-annotation.patch\n",
    )
    proc = export(distribution, vllm_fork, twice)
    assert proc.returncode == 1
    assert f"commits {named[:12]} and {twice[:12]} both name the patch '0005-logger-annotation.patch'" in proc.stderr


def without_base_comment(dist: Path) -> None:
    """The series as a hand-kept one would be: no `# forklift-base:` line to find the base by."""
    series = dist / "patches" / "series"
    series.write_text(
        "".join(line for line in series.read_text().splitlines(keepends=True) if not line.startswith("# forklift-base"))
    )


def test_a_fork_started_from_a_path_pin_finds_its_base_by_tag(vllm_fork, distribution, tmp_path):
    assert export(distribution, vllm_fork, "patched", "--base", vllm_fork.base).returncode == 0
    without_base_comment(distribution)
    tarball = default_cache().artifact_path(VLLM_032.sha256)  # the 0.32.0 sdist, pinned as a local file
    pypi_pin = VLLM_032_TOML[VLLM_032_TOML.index("[upstream]") : VLLM_032_TOML.index("[series]")]
    (distribution / "forklift.toml").write_text(
        VLLM_032_TOML.replace(
            pypi_pin, f'[upstream]\nsource = "path"\npath = "{tarball}"\nsha256 = "{VLLM_032.sha256}"\n\n'
        )
    )
    fork = tmp_path / "path-fork"
    proc = forklift("-c", str(distribution), "import", "--branch", "work", "--repo", str(fork))
    assert proc.returncode == 0, proc.stderr
    assert "tagged forklift-base" in proc.stdout
    proc = forklift("-c", str(distribution), "export", "--from", "work", "--repo", str(fork))  # no --base
    assert proc.returncode == 0, proc.stderr
    assert recorded_base(distribution / "patches") == Git(fork).resolve("refs/tags/forklift-base")
    assert [p.name for p in load_series(distribution / "patches").patches] == NAMES


def test_an_export_cut_short_leaves_the_committed_series_whole(vllm_fork, distribution, vllm_032_tree):
    """Fault injection, with a real limit rather than a fake: the export process may write no file
    over 64 KiB (RLIMIT_FSIZE, as a full disk or quota would stop it), and the last patch is bigger."""
    assert export(distribution, vllm_fork, "patched", "--base", vllm_fork.base).returncode == 0
    before = patch_files(distribution)
    filler = "".join(f"    Line {i} of a long note on the cache folder.\n" for i in range(2000))
    grown = commit(
        vllm_fork.git,
        vllm_fork.commits[2],
        {
            ASSETS_BASE: edit(
                vllm_032_tree.path,
                ASSETS_BASE,
                '    """Get the path to the cache for storing downloaded assets."""\n',
                f'    """Get the path to the cache for storing downloaded assets.\n\n{filler}    """\n',
            )
        },
        "Document that the assets cache folder is created on first use\n\nKind: docs\n",
    )
    limit = 64 * 1024

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.run(
        [
            *FORKLIFT,
            "-c",
            str(distribution),
            "export",
            "--from",
            grown,
            "--repo",
            str(vllm_fork.git.repo),
            "--base",
            vllm_fork.base,
        ],
        capture_output=True,
        text=True,
        preexec_fn=capped,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode != 0 and "File too large" in proc.stderr, proc.stdout + proc.stderr
    assert patch_files(distribution) == before  # every patch whole (the old one), no temp file left behind
    assert [p.name for p in load_series(distribution / "patches").patches] == NAMES
