"""The lost-work guard: `forklift check` fails naming the file or line a regenerated series dropped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import forklift
from tests.fork.fixtures import ASSETS_BASE, AUDIO, ENVS, FIX_LINE, LOGGER, SCHEDULER
from tests.fork.gitfork import branch, commit, edit

pytestmark = pytest.mark.network

FIX_PATCH = "0001-clear-speculative-drafts-for-requests-with-structure.patch"


def export(dist: Path, fork, ref: str):
    proc = forklift("-c", str(dist), "export", "--from", ref, "--repo", str(fork.git.repo), "--base", fork.base)
    assert proc.returncode == 0, proc.stderr
    return proc


def guarded(dist: Path, fork) -> Path:
    """The exported series plus a manifest: every file it touches, and the scheduler fix line."""
    export(dist, fork, "patched")
    proc = forklift("-c", str(dist), "manifest", "--write")
    assert proc.returncode == 0, proc.stderr
    manifest = dist / "patches" / "MANIFEST.toml"
    manifest.write_text(manifest.read_text() + f'\n[patches."{FIX_PATCH}"]\nlines = ["{FIX_LINE}"]\n')
    return manifest


def manifest_findings(dist: Path) -> tuple[int, list[str]]:
    proc = forklift("-c", str(dist), "check", "--json")
    findings = json.loads(proc.stdout)["findings"]
    return proc.returncode, [f["message"] for f in findings if f["check"] == "manifest"]


def rebuilt(fork, name: str, changes: list[tuple[dict[str, bytes | None], str]]) -> str:
    tip = fork.base
    for files, message in changes:
        tip = commit(fork.git, tip, files, message)
    branch(fork.git, name, tip)
    return name


def blob(fork, commit_id: str, path: str) -> bytes:
    [content] = fork.git.blobs([f"{commit_id}:{path}"])
    return content


def test_manifest_holds_for_the_series_it_was_written_from(vllm_fork, distribution):
    manifest = guarded(distribution, vllm_fork)
    assert all(f'"{p}"' in manifest.read_text() for p in (SCHEDULER, ENVS, AUDIO, ASSETS_BASE))
    assert forklift("-c", str(distribution), "manifest").returncode == 0
    code, lost = manifest_findings(distribution)
    assert (code, lost) == (0, [])


def test_check_names_the_file_a_rebase_dropped(vllm_fork, distribution):
    guarded(distribution, vllm_fork)
    c2, c3, c4 = vllm_fork.commits[1:]
    # The fork branch rebuilt without the scheduler commit (a rebase that silently lost it).
    export(
        distribution,
        vllm_fork,
        rebuilt(
            vllm_fork,
            "lost-commit",
            [
                ({ENVS: blob(vllm_fork, c2, ENVS)}, "Register the VLLM_LOG_KV_CACHE_BLOCKS knob\n"),
                ({AUDIO: blob(vllm_fork, c3, AUDIO)}, "Add the azacinto_foscolo audio asset\n"),
                (
                    {ASSETS_BASE: blob(vllm_fork, c4, ASSETS_BASE)},
                    "Document that the assets cache folder is created on first use\n",
                ),
            ],
        ),
    )
    code, lost = manifest_findings(distribution)
    assert code == 1
    assert f"the series no longer changes {SCHEDULER} (MANIFEST.toml requires it)" in lost
    assert f"patch {FIX_PATCH} is gone from the series (MANIFEST.toml requires its lines)" in lost
    proc = forklift("-c", str(distribution), "manifest")
    assert proc.returncode == 1 and f"lost work the series no longer changes {SCHEDULER}" in proc.stdout


def test_check_names_the_fix_line_a_regenerated_patch_dropped(vllm_fork, distribution, vllm_032_tree):
    guarded(distribution, vllm_fork)
    c2, c3, c4 = vllm_fork.commits[1:]
    # Same patch name and file, but the regenerated commit kept only a comment: the fix is gone.
    weaker = edit(
        vllm_032_tree.path,
        SCHEDULER,
        "                # Ignore draft tokens for prefill chunks.\n",
        "                # Ignore draft tokens for prefill chunks (and grammar requests).\n",
    )
    export(
        distribution,
        vllm_fork,
        rebuilt(
            vllm_fork,
            "lost-line",
            [
                ({SCHEDULER: weaker}, "Clear speculative drafts for requests with structured outputs\n"),
                ({ENVS: blob(vllm_fork, c2, ENVS)}, "Register the VLLM_LOG_KV_CACHE_BLOCKS knob\n"),
                ({AUDIO: blob(vllm_fork, c3, AUDIO)}, "Add the azacinto_foscolo audio asset\n"),
                (
                    {ASSETS_BASE: blob(vllm_fork, c4, ASSETS_BASE)},
                    "Document that the assets cache folder is created on first use\n",
                ),
            ],
        ),
    )
    code, lost = manifest_findings(distribution)
    assert code == 1
    assert lost == [f"{FIX_PATCH} no longer adds the line {FIX_LINE!r} (MANIFEST.toml)"]


def test_malformed_manifest_names_the_key(vllm_fork, distribution):
    export(distribution, vllm_fork, "patched")
    (distribution / "patches" / "MANIFEST.toml").write_text('files = ["vllm/envs.py"]\nfile = []\n')
    proc = forklift("-c", str(distribution), "manifest")
    assert proc.returncode == 2
    assert "MANIFEST.toml: file: unknown key (expected files, patches)" in proc.stderr


def test_manifest_write_requires_only_what_the_series_changes(vllm_fork, distribution, vllm_032_tree):
    """A file one patch creates and a later one deletes is named by patches but changed by none of the
    series: the manifest --write records must be the set check holds it to, or check reports it lost."""
    scratch = "vllm/scratch_notes.py"
    created = commit(
        vllm_fork.git,
        vllm_fork.base,
        {scratch: b"NOTES = []\n", LOGGER: edit(vllm_032_tree.path, LOGGER, "_DATE_FORMAT = ", "_DATE_FORMAT: str = ")},
        "Keep scratch notes and annotate the date format\n",
    )
    deleted = commit(vllm_fork.git, created, {scratch: None}, "Drop the scratch notes again\n")
    export(distribution, vllm_fork, deleted)
    proc = forklift("-c", str(distribution), "manifest", "--write")
    assert proc.returncode == 0, proc.stderr
    text = (distribution / "patches" / "MANIFEST.toml").read_text()
    assert f'"{LOGGER}"' in text and scratch not in text
    assert forklift("-c", str(distribution), "manifest").returncode == 0
    code, lost = manifest_findings(distribution)
    assert (code, lost) == (0, [])


def test_manifest_of_a_series_that_does_not_apply_names_the_patch(vllm_fork, distribution):
    export(distribution, vllm_fork, "patched")
    bad = distribution / "patches" / FIX_PATCH
    removed = "-            if request.is_prefill_chunk:\n"
    assert removed in bad.read_text()
    bad.write_text(bad.read_text().replace(removed, "-            if request.is_prefill_chunk_now:\n"))
    proc = forklift("-c", str(distribution), "manifest", "--write")
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"error: {FIX_PATCH}: fails on the pristine tree")
    assert not (distribution / "patches" / "MANIFEST.toml").exists()
