"""Skip entries and the patch root survive `forklift export` (a fork branch written back as a series)
and `forklift import` (the series as fork commits), on a real git repository."""

from __future__ import annotations

from forklift.fork.export import export_drift, export_fork, write_export
from forklift.fork.git import Git
from forklift.fork.importer import import_series
from forklift.fork.upstream import UpstreamPaths
from forklift.series.model import load_series
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
    export = export_fork(git, base, "HEAD", UpstreamPaths.from_tree(upstream), root="vllm")
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
