"""Patch headers: only real fields count, trailers are read as `git interpret-trailers --parse` reads them,
Retires-When reaches PATCHES.md, and a hand-written PATCHES.md is noted, not failed."""

from __future__ import annotations

import subprocess

import pytest

from forklift.series.headers import parse_header, split_trailers
from forklift.series.model import load_series, parse_patch, split_header
from forklift.series.render import series_patches_md
from tests.series.distro import MOD, distribution, edit, forklift

DIFF = edit("pkg/mod.py", 5, "v5 = 50")


def test_lowercase_prose_is_not_a_field():
    header = parse_header("Fix the scheduler.\nThis is a small patch of\nkind: fix. It clears drafts.\n")
    assert header.get("kind") == "" and "kind: fix." in header.body
    assert parse_header("Description: x\nKind: fix\n").get("kind") == "fix"


def test_a_dashes_note_in_the_preamble_does_not_start_the_diff():
    text = "Description: x\n--- notes for reviewers\nKind: fix\n\n" + DIFF
    header_text, diff = split_header(text)
    assert diff == DIFF and "Kind: fix" in header_text


def test_header_fields_after_the_divider_are_not_fields_as_in_dep3_and_git():
    header = parse_header("Description: x\n---\nKind: fix\n")
    assert header.get("kind") == ""


MESSAGES = [
    "Subject line\n\nBody text.\n\nKind: fix\nRetires-When: vllm ships #123\n",
    "Subject line\n\nBody text.\nKind: fix\n",  # not a paragraph of its own: git reads no trailer
    "Subject line\n\nBody\n\nkind: fix.\n",  # a lowercase key in a trailer block: git reads it
    "Subject line\n\nBody\n\nKind: fix\nthis line is prose\n",
    "Subject line\n\nBody\n\nSigned-off-by: A <a@b>\nsome prose\nReviewed-by: B <b@c>\n",  # git's own: 2/3 lines
    "Subject line\n\nBody\n\nSigned-off-by: A <a@b>\nprose one\nprose two\nprose three\nprose four\n",
    "Subject line\n\nBody\n\nKind: fix\nRetires-When: when upstream\n  merges #123\n",
    "Subject line\n\nBody\n\nKind : fix\nBug-vLLM: https://github.com/vllm-project/vllm/issues/1\n",
    "Subject line\n\nBody text\n---\nKind: fix\n",  # after the divider: not the message
    "Subject line\n\nBody\n\nKind: fix\n---\n vllm/x.py | 2 +-\n",
    "Subject line\n\nBody\n\nhttps://example.com/x: not a trailer\n",
]


def _git_trailers(message: str) -> list[tuple[str, str]]:
    out = subprocess.run(
        ["git", "interpret-trailers", "--parse"], input=message, capture_output=True, text=True, check=True
    ).stdout
    return [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in out.splitlines())]


@pytest.mark.parametrize("message", MESSAGES)
def test_trailers_agree_with_git_interpret_trailers(message):
    """The peer is git itself: the trailers of each message as `git interpret-trailers --parse` prints them."""
    lines = message.split("\n")[2:]  # the body after the subject and its blank line
    cut = next((i for i, line in enumerate(lines) if line.startswith("---")), len(lines))
    assert split_trailers(lines[:cut])[1] == _git_trailers(message)


def test_mail_patch_reads_trailers_before_the_diffstat_like_git_am():
    text = (
        "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n"
        "From: A <a@b>\nSubject: [PATCH] Clear drafts\n\nWhy.\n\nKind: fix\nRetires-When: vllm 0.34\n"
        "---\n pkg/mod.py | 2 +-\n\n" + DIFF
    )
    header = parse_patch("p.patch", text).header
    assert (header.get("kind"), header.get("retires-when"), header.description) == ("fix", "vllm 0.34", "Clear drafts")


def test_retires_when_is_rendered_and_hand_written_patches_md_is_a_note(tmp_path):
    patch = "Description: Clear drafts\nKind: fix\nRetires-When: vllm merges #123\n---\n" + DIFF
    dist = distribution(tmp_path, {"pkg/mod.py": MOD}, {"a.patch": patch})
    md = series_patches_md(load_series(dist / "patches"))
    assert "| retires when |" in md and "| vllm merges #123 |" in md
    toml = dist / "forklift.toml"
    toml.write_text(toml.read_text().replace('patches_md = ""', 'patches_md = "PATCHES.md"'))
    (dist / "PATCHES.md").write_text("# Our patches\n\nWritten by hand.\n")
    proc = forklift("-c", str(dist), "check")
    assert proc.returncode == 0, proc.stdout
    assert "note PATCHES.md has no forklift marker (hand-written): not held to a fresh render" in proc.stdout
    (dist / "PATCHES.md").write_text(md.replace("Clear drafts", "Old words"))
    proc = forklift("-c", str(dist), "check")
    assert proc.returncode == 1 and "FAIL patches-md: PATCHES.md: differs from a fresh render" in proc.stdout
