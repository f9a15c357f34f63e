"""Skip entries and the patch root survive `forklift export` (a fork branch written back as a series)
and `forklift import` (the series as fork commits), on a real git repository."""

from __future__ import annotations

import os
import subprocess

from forklift.fork.export import Export, ExportedPatch, _Committed, export_drift, export_fork, write_export
from forklift.fork.importer import import_series
from forklift.fork.repo import Git
from forklift.fork.upstream import UpstreamPaths
from forklift.series.model import Skipped, load_series
from tests.series.distro import MOD, commit_all, write_files

TREE = {"vllm/v1/core/sched.py": MOD, "setup.py": "x = 1\n"}
SKIPPED = "--- a/v1/core/sched.py\n+++ b/v1/core/sched.py\n@@ -1 +1 @@\n-nothing\n+here\n"


def _repo(tmp_path):
    repo = tmp_path / "fork"
    base = commit_all(repo, TREE, "base")
    commit_all(
        repo, {"vllm/v1/core/sched.py": MOD.replace("v10 = 10\n", "v10 = 100\n")}, "Scheduler: v10 is 100\n\nKind: fix"
    )
    return Git(repo), base


def test_export_below_the_root_keeps_skip_lines_and_import_reads_them_back(tmp_path):
    git, base = _repo(tmp_path)
    upstream = tmp_path / "pristine"
    write_files(upstream, TREE)
    export = export_fork(git, base, "HEAD", UpstreamPaths.from_tree(upstream), root="vllm", applier="gnu-patch")
    [patch] = export.patches
    assert "--- a/v1/core/sched.py\n+++ b/v1/core/sched.py\n" in patch.text  # written against the root
    folder = tmp_path / "patches"
    write_files(folder, {"native.patch": SKIPPED})
    (folder / "series").write_text("# forklift: skip native.patch -- went native in 0.28.0\n")
    write_export(export, folder)
    text = (folder / "series").read_text()
    assert "# forklift: skip native.patch -- went native in 0.28.0\n" in text and (folder / "native.patch").exists()
    assert export_drift(export, folder) == []
    series = load_series(folder, root="vllm")
    assert [s.name for s in series.skipped] == ["native.patch"] and [p.name for p in series.patches] == [patch.name]
    made = import_series(git, base, "reimported", series.patches)  # git apply --directory=vllm
    assert len(made) == 1
    assert (
        git.text("show", f"{made[0].commit}:vllm/v1/core/sched.py")
        == (tmp_path / "fork/vllm/v1/core/sched.py").read_text()
    )


def test_a_skip_line_in_the_middle_keeps_its_place_through_an_export(tmp_path):
    """The skip line stays between the entries it stood between (not moved to the top), quilt lists the
    same patches, and a re-export of an unchanged fork reports no drift."""
    git, base = _repo(tmp_path)
    commit_all(git.repo, {"vllm/v1/core/sched.py": MOD.replace("v20 = 20\n", "v20 = 200\n")}, "Scheduler: v20 is 200")
    upstream = tmp_path / "pristine"
    write_files(upstream, TREE)
    export = export_fork(git, base, "HEAD", UpstreamPaths.from_tree(upstream), root="vllm", applier="gnu-patch")
    first, second = (p.name for p in export.patches)
    folder = tmp_path / "patches"
    write_files(folder, {"native.patch": SKIPPED})
    write_export(export, folder)
    series = folder / "series"
    lines = series.read_text().splitlines()
    lines.insert(lines.index(second), "# forklift: skip native.patch -- went native in 0.28.0")
    series.write_text("\n".join(lines) + "\n")
    committed = series.read_text()
    write_export(
        export_fork(
            git, base, "HEAD", UpstreamPaths.from_tree(upstream), series_dir=folder, root="vllm", applier="gnu-patch"
        ),
        folder,
    )
    assert series.read_text() == committed
    entries = [line for line in committed.splitlines() if not line.startswith("# forklift-base")]
    assert entries[-3:] == [first, "# forklift: skip native.patch -- went native in 0.28.0", second]
    assert export_drift(export, folder) == []
    loaded = load_series(folder, root="vllm")
    assert [(s.name, s.after) for s in loaded.skipped] == [("native.patch", 1)]
    quilt = subprocess.run(
        ["quilt", "--quiltrc", "/dev/null", "series"],
        cwd=tmp_path,
        env={**os.environ, "QUILT_PATCHES": "patches"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert quilt.stdout.split() == [first, second]


def test_a_skip_after_an_entry_no_longer_exported_follows_the_nearest_one_still_there():
    def exported(name: str) -> ExportedPatch:
        return ExportedPatch(name=name, commit="1" * 40, subject=name, text="", files=(), dropped=())

    skips = (Skipped("first.patch", "why", 0), Skipped("late.patch", "why", 2), Skipped("end.patch", "why", 3))
    committed = _Committed(names=("a.patch", "b.patch", "c.patch"), skipped=skips)
    export = Export(base="0" * 40, tip="1" * 40, patches=(exported("a.patch"), exported("c.patch")))
    body = export.series_text(committed).splitlines()[2:]  # after the note and the base line
    assert body == [
        "# forklift: skip first.patch -- why",
        "a.patch",
        "# forklift: skip late.patch -- why",  # stood after b.patch, which the fork dropped
        "c.patch",
        "# forklift: skip end.patch -- why",
    ]
