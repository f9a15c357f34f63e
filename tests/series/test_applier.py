"""`[series] applier` through the real CLI: the verdict follows the chosen tool, the row names the other."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from forklift.source.hashing import directory_digest

U0 = "Description: a diff -U0 hunk, as Debian's samba and postgresql-15 carry\n---\n--- a/f.txt\n+++ b/f.txt\n@@ -10 +10 @@\n-10\n+TEN\n"


def _distribution(tmp_path: Path, applier: str) -> Path:
    upstream = tmp_path / "upstream"
    upstream.mkdir(exist_ok=True)
    (upstream / "f.txt").write_text("".join(f"{i}\n" for i in range(1, 31)))
    dist = tmp_path / applier
    (dist / "patches").mkdir(parents=True)
    (dist / "patches" / "0001-u0.patch").write_text(U0)
    (dist / "patches" / "series").write_text("0001-u0.patch\n")
    (dist / "forklift.toml").write_text(
        f'[upstream]\nsource = "path"\npath = "{upstream}"\nsha256 = "{directory_digest(upstream)}"\n'
        f'[series]\npatches_md = ""\napplier = "{applier}"\n'
    )
    return dist


def _check(dist: Path) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "forklift", "-c", str(dist), "check", "--json", "--receipts", str(dist / "r")]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def test_the_verdict_follows_the_applier_and_the_row_warns_of_the_other(tmp_path):
    gnu = _check(_distribution(tmp_path, "gnu-patch"))
    assert gnu.returncode == 0, gnu.stdout + gnu.stderr
    [row] = json.loads(gnu.stdout)["pass1"]
    assert row["status"] == "exact"
    assert row["disagreements"] == ["f.txt hunk #1 (line 10): git apply would refuse this hunk"]

    git = _check(_distribution(tmp_path, "git-apply"))
    assert git.returncode == 1
    [row] = json.loads(git.stdout)["pass1"]
    assert row["status"] == "fails"
    assert row["disagreements"] == ["f.txt hunk #1 (line 10): GNU patch would apply this hunk"]


def test_an_unknown_applier_is_one_line(tmp_path):
    dist = _distribution(tmp_path, "gnu-patch")
    toml = dist / "forklift.toml"
    toml.write_text(toml.read_text().replace('applier = "gnu-patch"', 'applier = "quilt"'))
    proc = _check(dist)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: {toml}: series.applier: Input should be 'gnu-patch' or 'git-apply' (got 'quilt')"
    ]
