"""forklift flip 0.32.0 -> 0.33.0 on real vLLM sdists, with a series exported from a throwaway fork."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forklift.config.load import load_config
from forklift.config.schema import PypiPin
from forklift.errors import ForkliftError
from forklift.flip.run import new_pin
from forklift.receipts import read_receipts
from forklift.series.model import load_series
from tests.cli import forklift
from tests.fork.fixtures import ASSETS_BASE, AUDIO, ENVS, KV_EVENTS, LOGGER, MEDUSA, SCHEDULER

pytestmark = pytest.mark.network

SHA_033 = "f4c33c2503d52bb411146afa9618a4f48bed68912f617e6803ac8d76e4c74112"


def exported(dist: Path, fork, ref: str) -> Path:
    proc = forklift("-c", str(dist), "export", "--from", ref, "--repo", str(fork.git.repo), "--base", fork.base)
    assert proc.returncode == 0, proc.stderr
    assert (dist / "PATCHES.md").is_file()  # export regenerates it with the series
    return dist


def flip_json(dist: Path, *extra: str) -> tuple[int, dict]:
    proc = forklift("-c", str(dist), "flip", "0.33.0", "--json", *extra)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_flip_reports_every_verdict(vllm_fork, distribution):
    dist = exported(distribution, vllm_fork, "blocked")
    before = {p.name: p.read_bytes() for p in (dist / "patches").iterdir()}
    code, report = flip_json(dist, "--write", "--repo", str(vllm_fork.git.repo))
    assert code == 1  # conflicts block the flip
    rows = {row["files"][0]: row for row in report["patches"][:4]}
    # upstream moved the code around these hunks but changed nothing they sit in: no look
    assert rows[SCHEDULER]["verdict"] == "offset" and rows[SCHEDULER]["look"] == []
    assert [h["text"] for h in rows[SCHEDULER]["hunks"]] == ["applies at +312"]
    assert rows[ENVS]["verdict"] == "offset" and rows[ENVS]["look"] == []
    assert rows[AUDIO]["verdict"] == "already-upstream"
    assert rows[ASSETS_BASE]["verdict"] == "exact" and rows[ASSETS_BASE]["look"] == []
    partly = next(row for row in report["patches"] if KV_EVENTS in row["files"])
    assert partly["verdict"] == "partly-upstream" and partly["files"] == [KV_EVENTS, LOGGER]
    assert [h["status"] for h in partly["hunks"]] == ["already", "exact"]
    conflict = [row for row in report["patches"] if row["verdict"] == "conflict"]
    assert (
        len(conflict) == 1 and conflict[0]["name"] == "0006-overlap-communication-in-ray-compiled-graphs-by-defa.patch"
    )
    [hunk] = conflict[0]["hunks"]
    assert (hunk["file"], hunk["text"]) == (ENVS, "conflicts: upstream deleted line 64")
    assert hunk["was"] and hunk["now"] == []
    gone = next(row for row in report["patches"] if row["files"] == [MEDUSA])
    assert gone["verdict"] == "file-gone" and [h["status"] for h in gone["hunks"]] == ["gone"]
    assert report["knobs"] == [] and report["knobs_skipped"].startswith("not computed: 2 patch(es) did not land")
    assert report["ok"] is False and report["written"] == []
    # --write refused: nothing moved
    assert 'version = "0.32.0"' in (dist / "forklift.toml").read_text()
    assert {p.name: p.read_bytes() for p in (dist / "patches").iterdir()} == before


def test_flip_knob_registry_before_and_after(vllm_fork, distribution):
    dist = exported(distribution, vllm_fork, "patched")
    code, report = flip_json(dist)
    assert code == 0
    pristine, patched = report["knobs"]
    assert pristine["tree"] == "pristine" and patched["tree"] == "patched"
    assert "VLLM_CHAT_TEMPLATE_FUEL" in pristine["added"]  # new in 0.33.0
    assert "VLLM_USE_RAY_COMPILED_DAG_OVERLAP_COMM" in pristine["removed"]  # gone in 0.33.0
    # The series registers one knob on both releases: +1 on each side, never "added" by the flip.
    assert (patched["before"], patched["after"]) == (pristine["before"] + 1, pristine["after"] + 1)
    assert "VLLM_LOG_KV_CACHE_BLOCKS" not in patched["added"]
    assert patched["added"] == pristine["added"] and patched["removed"] == pristine["removed"]
    assert patched["series_registers"] == ["VLLM_LOG_KV_CACHE_BLOCKS"]
    assert patched["series_unregistered_reads"] == []


def test_flip_write_retires_moves_the_pin_and_check_passes(vllm_fork, distribution, tmp_path):
    dist = exported(distribution, vllm_fork, "patched")
    report_md = tmp_path / "flip.md"
    refused = forklift("-c", str(dist), "flip", "0.33.0", "--write")
    assert refused.returncode == 1 and 'version = "0.32.0"' in (dist / "forklift.toml").read_text()
    assert f"names the fork base {vllm_fork.base[:12]} of vllm 0.32.0 sdist: pass --repo FORK" in refused.stderr
    repo = str(vllm_fork.git.repo)
    proc = forklift("-c", str(dist), "flip", "0.33.0", "--write", "--repo", repo, "--report", str(report_md))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    toml = (dist / "forklift.toml").read_text()
    assert 'version = "0.33.0"' in toml and f'sha256 = "{SHA_033}"' in toml
    assert toml.startswith("# test distribution")  # comments kept
    series = load_series(dist / "patches")
    assert [p.paths[0] for p in series.patches] == [SCHEDULER, ENVS, ASSETS_BASE]
    assert series.retired == (
        "0003-add-the-azacinto_foscolo-audio-asset.patch (already upstream in vllm 0.33.0 sdist)",
    )
    assert not (dist / "patches" / "0003-add-the-azacinto_foscolo-audio-asset.patch").exists()
    assert "## Retired" in (dist / "PATCHES.md").read_text()
    markdown = report_md.read_text()
    assert "# Flip vllm 0.32.0 sdist → vllm 0.33.0 sdist" in markdown
    assert "| `0003-add-the-azacinto_foscolo-audio-asset.patch` | already upstream: retire |" in markdown
    assert "## Needs a human look" not in markdown  # nothing upstream changed inside the hunks' scopes
    assert "## Evidence per patch" in markdown and f"- {SCHEDULER} hunk #1: applies at +312" in markdown
    [(_, receipt)] = read_receipts([dist / "receipts"])
    assert receipt.kind == "flip" and receipt.status == "ok" and receipt.pin["version"] == "0.33.0"
    # The moved series is exact on the new pin (offset patches were re-cut) and the gate passes.
    check = forklift("-c", str(dist), "check", "--json")
    assert check.returncode == 0, check.stdout + check.stderr
    assert {row["status"] for row in json.loads(check.stdout)["pass1"]} == {"exact"}
    # the base line moved with the pin: to the fork's new v0.33.0 commit, a child of the old base
    new_base = vllm_fork.git.commit_of("refs/tags/v0.33.0")
    assert f"# forklift-base: {new_base}\n" in (dist / "patches" / "series").read_text()
    assert vllm_fork.git.text("rev-parse", f"{new_base}^").strip() == vllm_fork.base


def test_flip_write_recuts_a_partly_upstream_patch(vllm_fork, distribution):
    dist = exported(distribution, vllm_fork, "partly")
    code, report = flip_json(dist, "--write", "--repo", str(vllm_fork.git.repo))
    assert code == 0, report
    assert [p["verdict"] for p in report["patches"]][-1] == "partly-upstream"
    recut = load_series(dist / "patches").patches[-1]
    assert recut.paths == (LOGGER,)  # the hunk upstream carries is gone from the patch
    assert recut.header.get("kind") == "docs"  # the header is kept
    check = forklift("-c", str(dist), "check", "--json")
    assert check.returncode == 0, check.stdout + check.stderr


def test_flip_to_a_version_not_on_the_index(vllm_fork, distribution):
    dist = exported(distribution, vllm_fork, "patched")
    proc = forklift("-c", str(dist), "flip", "0.99.0")
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: vllm 0.99.0 is not on the index")
    assert 'version = "0.32.0"' in (dist / "forklift.toml").read_text()


def test_flip_to_the_pinned_version_is_a_usage_error(distribution, vllm_fork):
    dist = exported(distribution, vllm_fork, "patched")
    proc = forklift("-c", str(dist), "flip", "0.32.0")
    assert proc.returncode == 2 and "already at 0.32.0" in proc.stderr


def test_flip_of_a_local_pin_is_a_usage_error(tmp_path):
    (tmp_path / "forklift.toml").write_text(
        '[upstream]\nsource = "path"\npath = "vllm.tar.gz"\nsha256 = "' + "0" * 64 + '"\n'
    )
    proc = forklift("-c", str(tmp_path), "flip", "0.33.0")
    assert proc.returncode == 2
    assert "upstream.source is 'path': a local pin has no versions to flip to" in proc.stderr


def test_flip_write_moves_a_recut_p0_patch_to_p1(vllm_fork, distribution):
    """A patch kept at -p0 (no a/ b/ prefixes) and re-cut by the flip comes back with prefixes: -p1."""
    dist = exported(distribution, vllm_fork, "patched")
    patches = dist / "patches"
    name = next(p.name for p in load_series(patches).patches if p.paths == (SCHEDULER,))
    text = (patches / name).read_text()
    text = text.replace(f"diff --git a/{SCHEDULER} b/{SCHEDULER}\n", "")
    (patches / name).write_text(
        text.replace(f"--- a/{SCHEDULER}", f"--- {SCHEDULER}").replace(f"+++ b/{SCHEDULER}", f"+++ {SCHEDULER}")
    )
    series = patches / "series"
    series.write_text(series.read_text().replace(f"{name}\n", f"{name} -p0  # kept as quilt wrote it\n"))
    assert forklift("-c", str(dist), "check").returncode == 0
    code, report = flip_json(dist, "--write", "--repo", str(vllm_fork.git.repo))
    assert code == 0, report
    check = forklift("-c", str(dist), "check", "--json")
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"{name}  # kept as quilt wrote it\n" in series.read_text()  # the option goes, the comment stays
    assert load_series(patches).by_name(name).strip == 1


def test_flip_write_takes_retired_patches_out_of_the_contract(vllm_fork, distribution):
    dist = exported(distribution, vllm_fork, "patched")
    names = [p.name for p in load_series(dist / "patches").patches]
    toml = dist / "forklift.toml"
    toml.write_text(
        toml.read_text().replace(
            'dir = "patches"\n',
            'dir = "patches"\ncontract = [\n'
            f'  "{names[2]}",  # upstream takes it in 0.33.0\n'
            f'  "{names[3]}",  # must stand alone\n]\n',
        )
    )
    assert forklift("-c", str(dist), "check").returncode == 0
    code, report = flip_json(dist, "--write", "--repo", str(vllm_fork.git.repo))
    assert code == 0, report
    text = toml.read_text()
    assert f'contract = [\n  "{names[3]}",  # must stand alone\n]\n' in text
    assert text.startswith("# test distribution") and names[2] not in text
    assert load_config(toml).data.series.contract == [names[3]]
    check = forklift("-c", str(dist), "check", "--json")
    assert check.returncode == 0, check.stdout + check.stderr


WHEEL_032_ARM = "vllm-0.32.0-cp38-abi3-manylinux_2_28_aarch64.whl"


def wheel_pin(filename: str) -> PypiPin:
    return PypiPin(source="pypi", package="vllm", version="0.32.0", filename=filename, sha256="0" * 64)


def test_flipping_a_wheel_pin_keeps_its_tags(tmp_path):
    """An aarch64 pin moves to the aarch64 wheel of the new release, whatever machine runs the flip."""
    moved = new_pin(wheel_pin(WHEEL_032_ARM), "0.33.0", tmp_path)
    assert moved.filename == "vllm-0.33.0-cp38-abi3-manylinux_2_28_aarch64.whl"
    assert moved.version == "0.33.0" and moved.sha256 != "0" * 64


def test_flipping_a_wheel_pin_without_a_like_wheel_names_the_tags(tmp_path):
    with pytest.raises(ForkliftError) as caught:
        new_pin(wheel_pin("vllm-0.32.0-cp38-abi3-win_amd64.whl"), "0.33.0", tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("vllm 0.33.0 on the index ") and " has no wheel tagged cp38-abi3-win_amd64 " in message
