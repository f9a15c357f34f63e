"""Every output of every command, pointed at a place that refuses writes, is one line naming the path and a non-zero
exit, never a traceback: a read-only folder and a path under a regular file (ENOTDIR), for each output option
(report -o, wheel OUT, tree OUT, init --dir, --receipts, --logs, --junit, --summary, a campaign's folders, the
distribution's own files) and for FORKLIFT_CACHE and FORKLIFT_STATE_DIR; and against a full disk (a small tmpfs).

Tests run as root here, and root writes through a mode of 0555: the read-only folder is made immutable
(chattr +i) or a read-only bind mount, whichever this machine allows; a non-root run uses the mode.
Servers and engines are stand-ins (a dead port, tests/launch/fake_engine.py): the write is refused first.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli import FORKLIFT
from tests.launch.test_supervise import make_dist
from tests.series.distro import distribution
from tests.ship.conftest import write_distribution

REPO = Path(__file__).resolve().parents[1]
RECEIPTS = REPO / "docs" / "example-report" / "receipts"
VLLM_RESULT = REPO / "tests" / "bench" / "data" / "vllm-0.32.0-serve-detailed.json"
DEAD = "http://127.0.0.1:9"  # the discard port: nothing answers


def _refuses(folder: Path) -> bool:
    try:
        (folder / ".probe").write_text("")
    except OSError:
        return True
    (folder / ".probe").unlink()
    return False


@pytest.fixture
def read_only(tmp_path) -> Iterator[Callable[[Path], Path]]:
    """Makes a folder (with what is already in it) refuse every write, undone at the end."""
    undo: list[list[str]] = []

    def lock(folder: Path) -> Path:
        if os.geteuid() != 0:
            folder.chmod(0o555)
            undo.append(["chmod", "755", str(folder)])
        elif subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0:
            undo.append(["chattr", "-i", str(folder)])
        elif subprocess.run(["mount", "--bind", "-o", "ro", str(folder), str(folder)], capture_output=True).returncode:
            pytest.skip("SKIPPED: as root, neither chattr +i nor a read-only bind mount is allowed here")
        else:
            undo.append(["umount", str(folder)])
        assert _refuses(folder)
        return folder

    yield lock
    for command in reversed(undo):
        subprocess.run(command, check=True)


@pytest.fixture
def full() -> Iterator[Callable[[Path], Path]]:
    """Makes a folder a file system with no space left (a 16 KiB tmpfs, filled), unmounted at the end."""
    mounted: list[Path] = []

    def fill(folder: Path) -> Path:
        folder.mkdir()
        if subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(folder)], capture_output=True
        ).returncode:
            pytest.skip("SKIPPED: mounting a small tmpfs (a full disk) is not allowed here")
        mounted.append(folder)
        with open(folder / "fill", "wb") as handle, contextlib.suppress(OSError):
            handle.write(bytes(1 << 20))
        return folder

    yield fill
    for folder in mounted:
        subprocess.run(["umount", str(folder)], check=True)


def _series_distribution(tmp_path: Path) -> Path:
    return distribution(tmp_path, {"a.py": "x = 1\n"}, {"0001-y.patch": PATCH}, extra_toml="")


PATCH = """--- a/a.py
+++ b/a.py
@@ -1 +1,2 @@
 x = 1
+y = 2
"""


def _forklift(*args: object, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FORKLIFT, *map(str, args)],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )


def _one_line(done: subprocess.CompletedProcess[str], place: Path) -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode not in (0, 130), done.stdout + done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("error: ") and str(place) in lines[0], lines


# (name, how to run it given the place under which it must write): each returns the finished process
def _cases(tmp_path: Path) -> dict[str, Callable[[Path], subprocess.CompletedProcess[str]]]:
    dist = _series_distribution(tmp_path)
    (tmp_path / "fake").mkdir()
    fake, _, fake_env = make_dist(tmp_path / "fake", timeout=60)
    fake_env = {**fake_env, "FAKE_ENGINE_MODE": "die"}
    gsm8k = tmp_path / "gsm8k.jsonl"
    gsm8k.write_text(json.dumps({"question": "1 + 1?", "answer": "#### 2"}) + "\n")
    wheel_dist = write_distribution(tmp_path / "wheel-dist")

    def campaign(key: str, value: str) -> Callable[[Path], subprocess.CompletedProcess[str]]:
        def run(place: Path) -> subprocess.CompletedProcess[str]:
            from tests.campaign.test_interrupts import local_campaign

            folder = local_campaign(tmp_path / "campaign")
            text = (folder / "campaign.toml").read_text().replace('report = "report.md"', "")
            (folder / "campaign.toml").write_text(f'{key} = "{place / value}"\n' + text)
            env = {"FAKE_ENGINE_PIDS": str(tmp_path / "pids")}
            return _forklift("campaign", "campaign.toml", cwd=folder, env=env)

        return run

    def flip(*args: object) -> subprocess.CompletedProcess[str]:
        from tests.flip.test_carriers import _git_distribution

        (tmp_path / "flip").mkdir()
        flipped, _ = _git_distribution(tmp_path / "flip")  # pinned to tag v1 of a local repository; v2 is newer
        return _forklift("-c", flipped, "flip", "v2", *args, cwd=tmp_path)

    return {
        "report -o": lambda p: _forklift("report", RECEIPTS, "-o", p / "r.md", cwd=tmp_path),
        "check --receipts": lambda p: _forklift("-c", dist, "check", "--receipts", p / "r", cwd=tmp_path),
        "check --junit": lambda p: _forklift("-c", dist, "check", "--fresh", "--junit", p / "j.xml", cwd=tmp_path),
        "check --summary": lambda p: _forklift("-c", dist, "check", "--fresh", "--summary", p / "s.md", cwd=tmp_path),
        "tree OUT": lambda p: _forklift("-c", dist, "tree", p / "t", cwd=tmp_path),
        "init --dir": lambda p: _forklift("init", "--path", dist.parent / "upstream", "--dir", p / "d", cwd=tmp_path),
        "FORKLIFT_CACHE fetch": lambda p: _forklift("-c", dist, "fetch", cwd=tmp_path, env={"FORKLIFT_CACHE": str(p)}),
        "FORKLIFT_CACHE check": lambda p: _forklift(
            "-c", dist, "check", "--fresh", cwd=tmp_path, env={"FORKLIFT_CACHE": str(p / "c")}
        ),
        "bench import --receipts": lambda p: _forklift("bench", "import", VLLM_RESULT, "--receipts", p, cwd=tmp_path),
        "bench --receipts": lambda p: _forklift(
            "bench", "--url", DEAD, "--model", "m", "--synthetic", "8:8", "--receipts", p, cwd=tmp_path
        ),
        "quality --receipts": lambda p: _forklift(
            "quality", "--url", DEAD, "--model", "m", "--suite", "gsm8k", "--data", gsm8k, "--receipts", p, cwd=tmp_path
        ),
        "canary --receipts": lambda p: _forklift(
            "canary", "--url", DEAD, "--model", "m", "--suite", "json", "--receipts", p, cwd=tmp_path
        ),
        "launch --receipts": lambda p: _forklift("-c", fake, "launch", "fake", "--receipts", p, cwd=fake, env=fake_env),
        "launch --logs": lambda p: _forklift("-c", fake, "launch", "fake", "--logs", p / "l", cwd=fake, env=fake_env),
        "launch FORKLIFT_STATE_DIR": lambda p: _forklift(
            "-c", fake, "launch", "fake", cwd=fake, env={**fake_env, "FORKLIFT_STATE_DIR": str(p / "s")}
        ),
        "ladder --receipts": lambda p: _forklift(
            "-c", fake, "ladder", "fake", "--axis", "max-num-seqs=1,2", "--receipts", p, cwd=fake, env=fake_env
        ),
        "flip --report": lambda p: flip("--report", p / "f.md", "--receipts", tmp_path / "r"),
        "flip --receipts": lambda p: flip("--receipts", p / "r"),
        "wheel OUT": lambda p: _forklift("-c", wheel_dist, "wheel", p / "w", cwd=tmp_path),
        "campaign receipts": campaign("receipts", "r"),
        "campaign logs": campaign("logs", "l"),
        "campaign report": campaign("report", "report.md"),
    }


CASES = [
    "report -o",
    "check --receipts",
    "check --junit",
    "check --summary",
    "tree OUT",
    "init --dir",
    "FORKLIFT_CACHE fetch",
    "FORKLIFT_CACHE check",
    "bench import --receipts",
    "bench --receipts",
    "quality --receipts",
    "canary --receipts",
    "launch --receipts",
    "launch --logs",
    "launch FORKLIFT_STATE_DIR",
    "ladder --receipts",
    "flip --report",
    "flip --receipts",
    "wheel OUT",
    "campaign receipts",
    "campaign logs",
    "campaign report",
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("place", ["read-only folder", "under a file", "full disk"])
def test_an_output_that_cannot_be_written_is_one_line_naming_it(tmp_path, read_only, full, case, place):
    if (case, place) == ("FORKLIFT_CACHE check", "full disk"):
        pytest.skip("a folder pin is read where it lies: its check writes only memos a full disk may refuse")
    if (case, place) == ("campaign logs", "full disk"):
        pytest.skip("the log file is made; the engine's own writes to it fail, and its cells say the boot failed")
    run = _cases(tmp_path)[case]
    if place == "read-only folder":
        (tmp_path / "locked").mkdir()
        target = read_only(tmp_path / "locked")
    elif place == "full disk":
        target = full(tmp_path / "full")
    else:
        (tmp_path / "a-file").write_text("")
        target = tmp_path / "a-file" / "out"
    _one_line(run(target), tmp_path / "a-file" if place == "under a file" else target)


def test_the_report_in_its_receipts_folder_and_the_distributions_own_files(tmp_path, read_only):
    """Outputs whose place is an input's folder: the report beside its receipts, PATCHES.md and MANIFEST.toml."""
    receipts = tmp_path / "receipts"
    shutil.copytree(RECEIPTS, receipts)
    _one_line(_forklift("report", read_only(receipts), cwd=tmp_path), receipts)
    dist = _series_distribution(tmp_path)
    (dist / "forklift.toml").write_text((dist / "forklift.toml").read_text().replace('patches_md = ""', ""))
    read_only(dist)
    _one_line(_forklift("-c", dist, "patches-md", cwd=tmp_path), dist)
    read_only(dist / "patches")
    _one_line(_forklift("-c", dist, "manifest", "--write", cwd=tmp_path), dist / "patches")
