"""A campaign build is proved where its boot imports the engine from: its interpreter, with its environment, from
this working folder. A verified folder that something else shadows (here a `vllm` folder in the working folder,
which `python -m` puts first on the import path) is one line, never an OK about files that do not run. A relative
interpreter path is relative to the campaign file, and a venv's python stays the venv's (never the system's)."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from forklift.campaign import load_campaign_file
from forklift.campaign.builds import interpreter, verify_build
from forklift.config.load import parse_config
from forklift.errors import ForkliftError
from tests.fixtures.engine import distribution_toml

INIT = b"__version__ = '0.0.1'\n"


def fake_install(site: Path) -> None:
    """A pristine install of a one-file `vllm` 0.0.1 with its RECORD, as pip writes one."""
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_bytes(INIT)
    info = site / "vllm-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.0.1\n")
    digest = base64.urlsafe_b64encode(hashlib.sha256(INIT).digest()).rstrip(b"=").decode()
    (info / "RECORD").write_text(f"vllm/__init__.py,sha256={digest},{len(INIT)}\nvllm-0.0.1.dist-info/RECORD,,\n")


def setup(tmp_path: Path, python: str = sys.executable):
    fake_install(tmp_path / "builds" / "B")
    (tmp_path / "forklift.toml").write_text(distribution_toml())
    (tmp_path / "campaign.toml").write_text(
        f'[builds.B]\npython = "{python}"\nsite = "builds/B"\npristine = true\n'
        '[[settings]]\nprofile = "tiny"\n[[suites]]\nkind = "bench"\nsynthetic = "16:16"\n'
    )
    campaign = load_campaign_file(tmp_path / "campaign.toml")
    config = parse_config((tmp_path / "forklift.toml").read_text(), tmp_path / "forklift.toml")
    return campaign, config


def test_the_verified_folder_is_the_one_imported(tmp_path, monkeypatch):
    campaign, config = setup(tmp_path)
    monkeypatch.chdir(tmp_path)
    build = verify_build("B", campaign.builds["B"], campaign, config)
    assert build.version == "0.0.1" and build.site == str(tmp_path / "builds" / "B")


def test_a_folder_that_shadows_the_verified_one_is_refused(tmp_path, monkeypatch):
    campaign, config = setup(tmp_path)
    shadow = tmp_path / "work" / "vllm"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    monkeypatch.chdir(shadow.parent)
    with pytest.raises(ForkliftError) as caught:
        verify_build("B", campaign.builds["B"], campaign, config)
    assert str(caught.value) == (
        f"build B: {sys.executable} imports vllm from {shadow} first, not from {tmp_path / 'builds' / 'B' / 'vllm'},"
        " the one verified (PYTHONPATH, a .pth file or a folder named so in the working folder puts it first)"
    )


def test_a_relative_venv_python_stays_the_venvs(tmp_path, monkeypatch):
    """A venv's python is a symlink to the system's; followed, it runs without the venv's site-packages."""
    venv.create(tmp_path / "envs" / "b", with_pip=False, symlinks=True)
    campaign, _ = setup(tmp_path, python="envs/b/bin/python")
    monkeypatch.chdir("/")
    python = interpreter("B", "envs/b/bin/python", campaign)
    assert python == str(tmp_path / "envs" / "b" / "bin" / "python")
    prefix = subprocess.run([python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True)
    assert prefix.stdout.strip() == str(tmp_path / "envs" / "b")
    assert interpreter("B", "./envs/b/bin/python", campaign) == python
    assert os.path.islink(python)
