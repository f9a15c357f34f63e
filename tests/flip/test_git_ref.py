"""`forklift flip --git-ref REF`: the series tried on a branch head of a git pin's repository (upstream main),
so a team learns which patches break before the release; always a dry run. Real git repositories."""

from __future__ import annotations

import json
import subprocess

from tests.series.distro import MOD, commit_all, edit, forklift, write_files


def _distribution(tmp_path):
    """Pinned to tag v1; upstream main has moved on since: line 5 rewritten (breaks a.patch), line 20 kept."""
    repo = tmp_path / "upstream"
    commit = commit_all(repo, {"pkg/mod.py": MOD}, "v1", tag="v1")
    subprocess.run(["git", "-C", str(repo), "branch", "-M", "main"], check=True)
    head = commit_all(repo, {"pkg/mod.py": MOD.replace("v5 = 5\n", "v5 = 'five'\n")}, "work after v1")
    dist = tmp_path / "dist"
    write_files(dist / "patches", {"a.patch": edit("pkg/mod.py", 5, "v5 = 50"), "b.patch": edit("pkg/mod.py", 20, "x")})
    (dist / "patches" / "series").write_text("a.patch\nb.patch\n")
    (dist / "forklift.toml").write_text(
        f'[engine]\nkind = "generic"\n[upstream]\nsource = "git"\nurl = "{repo}"\ntag = "v1"\ncommit = "{commit}"\n'
        '[series]\npatches_md = ""\n'
    )
    return dist, head


def test_git_ref_names_the_patch_that_upstream_main_breaks(tmp_path):
    dist, head = _distribution(tmp_path)
    pinned = (dist / "forklift.toml").read_text()
    proc = forklift("-c", str(dist), "flip", "--git-ref", "main", "--json", "--receipts", str(tmp_path / "r"))
    assert proc.returncode == 1, proc.stderr  # a patch would break: the nightly job goes red
    report = json.loads(proc.stdout)
    assert report["new"].endswith(f"main @ {head[:12]}")
    verdicts = {p["name"]: p["verdict"] for p in report["patches"]}
    assert verdicts["b.patch"] == "exact" and verdicts["a.patch"] not in ("exact", "offset")
    assert report["new_pin"]["commit"] == head
    assert (dist / "forklift.toml").read_text() == pinned  # a dry run: the pin is never moved to a branch head


def test_git_ref_full_ref_name_and_tags_resolve(tmp_path):
    dist, head = _distribution(tmp_path)
    proc = forklift(
        "-c", str(dist), "flip", "--git-ref", "refs/heads/main", "--json", "--receipts", str(tmp_path / "r")
    )
    assert json.loads(proc.stdout)["new_pin"]["commit"] == head


def test_git_ref_bad_usage_is_one_line(tmp_path):
    dist, _ = _distribution(tmp_path)
    receipts = ("--receipts", str(tmp_path / "r"))
    cases = {
        ("flip", "--git-ref", "main", "--write"): "error: --git-ref is a dry run: a branch head is no release to pin",
        ("flip", "v2", "--git-ref", "main"): "error: give the release to flip to (VERSION) or --git-ref REF, not both",
        ("flip",): "error: give the release to flip to (VERSION) or --git-ref REF, not both",
    }
    for argv, expected in cases.items():
        proc = forklift("-c", str(dist), *argv, *receipts)
        assert proc.returncode == 2 and proc.stderr.strip().startswith(expected), (argv, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1
    missing = forklift("-c", str(dist), "flip", "--git-ref", "nope", *receipts)
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"error: ref 'nope' (a branch or tag) not found at {tmp_path / 'upstream'}"


def test_git_ref_needs_a_git_pin(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text(MOD)
    init = forklift("init", "--path", "src", cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    proc = forklift("flip", "--git-ref", "main", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("--git-ref needs a git pin (upstream.source = 'git'), not 'path'")
