"""The whole-check result cache: an unchanged check is replayed byte for byte; any changed input reruns it.

Real runs of the CLI on a small distribution pinned by path, with a cache folder of their own. Which runs
replayed is read from the cache entry: it names the receipt of the run that stored it, and a replay
stores nothing. Receipts are compared with their id and creation time taken out: a replay writes a
new receipt, as a fresh run would, so those two differ and nothing else may.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.series.distro import MOD, distribution, edit

TREE = {"pkg/mod.py": MOD, "pkg/other.py": MOD}
PATCHES = {
    "0001-mod.patch": "Description: v10\n---\n" + edit("pkg/mod.py", 10, "v10 = 100"),
    "0002-new.patch": "--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1 @@\n+K = 1\n",
}
# A check run the way the console script runs it, with forklift's version set first (argv[1]).
RUN = "import sys, forklift\nforklift.__version__ = sys.argv.pop(1)\nfrom forklift.cli import main\nmain()\n"


class Dist:
    def __init__(self, tmp_path: Path) -> None:
        self.root = distribution(tmp_path, TREE, PATCHES)
        self.upstream = tmp_path / "upstream"
        self.cache = tmp_path / "cache"
        self.env = {**os.environ, "COLUMNS": "250", "FORKLIFT_CACHE": str(self.cache)}
        self.env.pop("CI", None)  # CI=true re-hashes the cached tree on every check, which never replays

    def check(self, *args: str, version: str | None = None) -> subprocess.CompletedProcess[str]:
        import forklift

        argv = [sys.executable, "-c", RUN, version or forklift.__version__, "-c", str(self.root), "check", *args]
        return subprocess.run(argv, capture_output=True, text=True, env=self.env, check=False)

    def stored_from(self) -> str | None:
        """The receipt file name of the run whose result the cache holds (None: nothing stored)."""
        entries = list((self.cache / "checks").glob("*.json"))
        return json.loads(max(entries, key=lambda p: p.stat().st_mtime_ns).read_text())["from"] if entries else None


def receipt_of(proc: subprocess.CompletedProcess[str]) -> Path:
    found = re.findall(r"receipts/(\S+\.json)", proc.stdout)
    assert found, proc.stdout + proc.stderr
    return Path(found[-1])


def without_stamp(path: Path) -> str:
    text = path.read_text()
    return re.sub(r'"created": "[^"]+"', '"created": T', re.sub(r'"id": "[0-9a-f]{12}"', '"id": I', text, count=1))


@pytest.fixture()
def dist(tmp_path: Path) -> Dist:
    made = Dist(tmp_path)
    first = made.check()  # the folder pin is read where it lies: nothing is built, so even a first result is stored
    assert first.returncode == 0, first.stdout + first.stderr
    assert made.stored_from() == receipt_of(first).name
    shutil.rmtree(made.cache / "checks")  # each test starts with a warm stat memo and no stored result
    return made


@pytest.mark.parametrize("args", [(), ("--json",), ("--digests",)])
def test_an_unchanged_check_replays_the_same_output_and_receipt(dist: Dist, args: tuple[str, ...]) -> None:
    fresh = dist.check(*args)
    assert fresh.returncode == 0 and dist.stored_from() == receipt_of(fresh).name
    replayed = dist.check(*args)
    assert replayed.returncode == 0 and dist.stored_from() == receipt_of(fresh).name  # nothing stored: replayed
    assert receipt_of(replayed) != receipt_of(fresh)  # a new receipt, as a fresh run writes
    assert replayed.stdout.replace(receipt_of(replayed).name, "R") == fresh.stdout.replace(receipt_of(fresh).name, "R")
    assert replayed.stderr == fresh.stderr
    receipts = dist.root / "receipts"
    assert without_stamp(receipts / receipt_of(replayed)) == without_stamp(receipts / receipt_of(fresh))
    again = dist.check(*args, "--fresh")  # applies again and stores what it found: the same
    assert dist.stored_from() == receipt_of(again).name
    assert again.stdout.replace(receipt_of(again).name, "R") == fresh.stdout.replace(receipt_of(fresh).name, "R")


def test_a_failing_check_replays_its_exit_code(dist: Dist) -> None:
    (dist.root / "patches" / "0001-mod.patch").write_text(edit("pkg/mod.py", 10, "v10 = 100").replace(" v9", " v99"))
    fresh = dist.check()
    assert fresh.returncode == 1 and dist.stored_from() == receipt_of(fresh).name
    replayed = dist.check()
    assert replayed.returncode == 1 and dist.stored_from() == receipt_of(fresh).name
    assert "FAIL pass1: 0001-mod.patch" in replayed.stdout


def _patch_byte(dist: Dist) -> None:
    path = dist.root / "patches" / "0002-new.patch"
    path.write_text(path.read_text().replace("K = 1", "K = 2"))


def _stray_patch(dist: Dist) -> None:
    (dist.root / "patches" / "0003-unlisted.patch").write_text(PATCHES["0002-new.patch"])


def _config_key(dist: Dist) -> None:
    toml = dist.root / "forklift.toml"
    toml.write_text(toml.read_text().replace("[series]\n", '[series]\napplier = "git-apply"\n'))


@pytest.mark.parametrize("change", [_patch_byte, _stray_patch, _config_key], ids=["patch-byte", "unlisted", "config"])
def test_a_changed_input_runs_the_check_again(dist: Dist, change) -> None:
    stored = dist.check()
    assert dist.stored_from() == receipt_of(stored).name
    change(dist)
    rerun = dist.check()
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert dist.stored_from() == receipt_of(rerun).name  # applied again, and stored anew


def test_a_changed_forklift_version_runs_the_check_again(dist: Dist) -> None:
    stored = dist.check(version="0.0.1")
    assert dist.stored_from() == receipt_of(stored).name
    rerun = dist.check(version="0.0.2")
    assert dist.stored_from() == receipt_of(rerun).name
    assert json.loads((dist.root / "receipts" / receipt_of(rerun)).read_text())["fingerprint"]["forklift"] == "0.0.2"


def test_a_changed_file_of_the_pinned_folder_is_caught_not_replayed(dist: Dist) -> None:
    stored = dist.check()
    assert dist.stored_from() == receipt_of(stored).name
    (dist.upstream / "pkg" / "other.py").write_text(MOD + "v31 = 31\n")
    rerun = dist.check()
    assert rerun.returncode == 1 and "sha256 mismatch" in rerun.stderr, rerun.stdout + rerun.stderr


def test_other_command_lines_run_and_store_nothing(dist: Dist, tmp_path: Path) -> None:
    proc = dist.check("--junit", str(tmp_path / "check.xml"))
    assert proc.returncode == 0 and (tmp_path / "check.xml").is_file()
    assert dist.stored_from() is None
