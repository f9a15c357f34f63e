"""The check gate's pure core on small real trees: each failure is found and named."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from forklift.fsio import tree_reader
from forklift.series.check import check_series
from forklift.series.junit import junit_xml
from forklift.series.model import load_series
from forklift.series.render import overlay_hash, patches_md

MOD = "".join(f"{chr(97 + i)} = {i + 1}\n" for i in range(20))  # a = 1 ... t = 20


def _setup(tmp_path: Path, patches: dict[str, str], tree: dict[str, str] | None = None):
    root = tmp_path / "tree"
    for path, text in (tree or {"pkg/mod.py": MOD}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    folder = tmp_path / "patches"
    folder.mkdir()
    (folder / "series").write_text("".join(f"{name}\n" for name in patches))
    for name, text in patches.items():
        (folder / name).write_text(text)
    return load_series(folder), tree_reader(root)


def _patch(old: str, new: str, path: str = "pkg/mod.py", line: int = 2) -> str:
    lines = MOD.splitlines()
    i = line - 1
    before, after = lines[max(i - 3, 0) : i], lines[i + 1 : i + 4]
    body = "".join(f" {x}\n" for x in before) + f"-{old}\n+{new}\n" + "".join(f" {x}\n" for x in after)
    n = len(before) + 1 + len(after)
    return f"--- a/{path}\n+++ b/{path}\n@@ -{i - len(before) + 1},{n} +{i - len(before) + 1},{n} @@\n{body}"


def test_clean_series_passes_with_overlay_hash_and_touched_files(tmp_path):
    series, read = _setup(
        tmp_path, {"1.patch": _patch("b = 2", "b = 20"), "2.patch": _patch("l = 12", "l = 120", line=12)}
    )
    report = check_series(series, read, ["2.patch"])
    assert report.ok, report.findings
    assert [r.status for r in report.pass1] == ["exact", "exact"]
    assert [r.name for r in report.pass2] == ["2.patch"]
    assert [(f.path, f.added, f.removed) for f in report.touched] == [("pkg/mod.py", 2, 2)]
    assert report.overlay_hash.startswith("sha256:")


def test_overlay_hash_is_about_content_not_how_the_series_is_cut(tmp_path):
    one = _patch("b = 2", "b = 20")
    two = _patch("l = 12", "l = 120", line=12)
    split, read = _setup(tmp_path / "split", {"1.patch": one, "2.patch": two})
    combined_text = one + two.split("\n", 2)[2]  # the second patch's hunk appended to the first
    joined, read2 = _setup(tmp_path / "joined", {"all.patch": combined_text})
    a, b = check_series(split, read, []), check_series(joined, read2, [])
    assert a.ok and b.ok
    assert a.overlay_hash == b.overlay_hash
    changed = check_series(split, read, []).overlay_hash
    other, read3 = _setup(tmp_path / "other", {"1.patch": _patch("b = 2", "b = 21")})
    assert check_series(other, read3, []).overlay_hash != changed


def test_fuzz_and_already_applied_fail_the_gate(tmp_path):
    fuzzy = _patch("l = 12", "l = 120", line=12).replace(" i = 9\n", " i = 90\n")  # context upstream lacks
    series, read = _setup(tmp_path, {"f.patch": fuzzy})
    report = check_series(series, read, [])
    assert report.pass1[0].status == "fuzz"
    assert report.findings[0].message == "fuzz: pkg/mod.py hunk #1 (line 9): needs fuzz 1"
    conflict = _patch("b = 99", "b = 20")  # upstream has b = 2: neither side matches
    series, read = _setup(tmp_path / "x", {"c.patch": conflict})
    assert check_series(series, read, []).pass1[0].status == "fails"
    reverse_text = _patch("b = 2", "b = 20")
    series, read = _setup(tmp_path / "y", {"r.patch": reverse_text}, {"pkg/mod.py": MOD.replace("b = 2", "b = 20")})
    report = check_series(series, read, [])
    assert report.pass1[0].status == "already-applied"
    assert not report.ok


def test_contract_patch_must_apply_alone(tmp_path):
    first = _patch("b = 2", "b = 20")
    second = first.replace("-b = 2\n+b = 20", "-b = 20\n+b = 200")  # builds on the first
    series, read = _setup(tmp_path, {"1.patch": first, "2.patch": second})
    report = check_series(series, read, ["2.patch"])
    assert [r.status for r in report.pass1] == ["exact", "exact"]
    assert [(f.check, f.subject) for f in report.findings] == [("pass2", "2.patch")]


def test_whitespace_and_compile_errors(tmp_path):
    series, read = _setup(
        tmp_path, {"ws.patch": _patch("b = 2", "b = 2   "), "syntax.patch": _patch("l = 12", "l = (12", line=12)}
    )
    report = check_series(series, read, [])
    kinds = {(f.check, f.subject) for f in report.findings}
    assert ("whitespace", "ws.patch") in kinds
    assert ("compile", "pkg/mod.py") in kinds
    message = next(f.message for f in report.findings if f.check == "compile")
    assert message.startswith("pkg/mod.py:12: SyntaxError")


def test_a_series_that_changes_nothing_fails(tmp_path):
    undo = _patch("b = 20", "b = 2")
    series, read = _setup(tmp_path, {"1.patch": _patch("b = 2", "b = 20"), "2.patch": undo})
    report = check_series(series, read, [])
    assert [f.check for f in report.findings] == ["nothing-changed"]
    assert report.overlay_hash is None


def test_patches_md_drift(tmp_path):
    series, read = _setup(tmp_path, {"1.patch": "Description: Tune b\nKind: tune\n---\n" + _patch("b = 2", "b = 20")})
    fresh = patches_md(list(series.patches))
    assert "| 1 | `1.patch` | tune | Tune b |" in fresh
    assert check_series(series, read, [], committed_patches_md=fresh).ok
    stale = check_series(series, read, [], committed_patches_md=fresh.replace("Tune b", "Old text"))
    assert [f.check for f in stale.findings] == ["patches-md"]


def test_junit_has_a_case_per_patch_and_failures_for_findings(tmp_path):
    series, read = _setup(
        tmp_path, {"ok.patch": _patch("b = 2", "b = 20"), "ws.patch": _patch("l = 12", "l = 12 ", line=12)}
    )
    suite = ET.fromstring(junit_xml(check_series(series, read, ["ok.patch"])).split("?>", 1)[1])
    names = [(c.get("classname"), c.get("name")) for c in suite]
    assert ("forklift.pass1", "ok.patch") in names and ("forklift.pass2", "ok.patch") in names
    failed = [c.get("name") for c in suite if c.find("failure") is not None]
    assert failed == ["ws.patch"]
    assert suite.get("failures") == "1"


def test_overlay_hash_of_known_content_is_stable():
    changed = {"x.txt": (b"a\n", b"b\n")}
    assert overlay_hash(changed) == overlay_hash(dict(changed))
    assert overlay_hash(changed) != overlay_hash({"x.txt": (b"a\n", b"c\n")})
