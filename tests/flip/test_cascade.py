"""flip 0.31.0 -> 0.33.0 on a series cut from real upstream changes: every verdict, its evidence, the cascade."""

from __future__ import annotations

import json

import pytest

from tests.cli import forklift
from tests.flip.realseries import EC_COMMON, MEDUSA, MIMO, POOLER, PROTOCOL, copy_series

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def flipped(real_series, tmp_path_factory):
    """One flip of the real series for every test that reads its report."""
    report_md = tmp_path_factory.mktemp("report") / "flip.md"
    proc = forklift("-c", str(real_series.dist), "flip", "0.33.0", "--json", "--report", str(report_md))
    assert proc.returncode == 1, proc.stderr  # the series does not move as it is
    report = json.loads(proc.stdout)
    rows = {row["name"]: row for row in report["patches"]}
    assert list(rows) == list(real_series.names)
    return report, rows, report_md.read_text()


def test_every_verdict(flipped):
    _, rows, _ = flipped
    assert {name[5:-6]: row["verdict"] for name, row in rows.items()} == {
        "backport-edited": "recut",
        "partly-landed": "retire-candidate",
        "chain-a": "conflict",
        "chain-b": "blocked",
        "chain-c": "blocked",
        "look-enclosing": "offset",
        "new-file-rewrote": "upstream-own",
        "medusa": "file-gone",
        "routers-upstream": "already-upstream",
        "partly-upstream": "partly-upstream",
        "fuzz": "fuzz",
        "exact": "exact",
    }


def test_the_cascade_names_the_patch_that_blocks(flipped):
    """chain-b and chain-c fail only because chain-a did not land: they say so, and chain-b's new file survives."""
    _, rows, markdown = flipped
    b, c = rows["0004-chain-b.patch"], rows["0005-chain-c.patch"]
    assert (b["blocked_by"], b["via"]) == ("0003-chain-a.patch", None)
    assert (c["blocked_by"], c["via"]) == ("0003-chain-a.patch", "0004-chain-b.patch")
    # chain-a's file creation landed in the best-effort tree, so chain-b's edit of that file applies there
    assert [h["status"] for h in b["hunks"]] == ["blocked", "exact"]
    assert [h["status"] for h in rows["0003-chain-a.patch"]["hunks"]] == ["conflict", "exact"]
    assert "| 5 | `0005-chain-c.patch` | blocked by 0003-chain-a.patch (via 0004-chain-b.patch) |" in markdown


def test_a_conflict_shows_the_line_upstream_changed(flipped):
    _, rows, markdown = flipped
    [hunk, _] = rows["0003-chain-a.patch"]["hunks"]
    assert hunk["file"] == EC_COMMON and hunk["line"] == 41
    assert hunk["text"] == "conflicts: upstream changed line 41"
    assert hunk["was"] == ["    loads: dict[str, tuple[int, list[int]]] = field(default_factory=dict)"]
    assert hunk["now"] == [
        "    loads: dict[str, tuple[int, list[int], tuple[int, int]]] = field(",
        "        default_factory=dict",
        "    )",
    ]
    assert "  -    loads: dict[str, tuple[int, list[int]]] = field(default_factory=dict)\n" in markdown


def test_a_backport_upstream_took_but_for_one_line_is_partly_upstream_not_a_retire_candidate(flipped):
    _, rows, markdown = flipped
    retire = rows["0001-backport-edited.patch"]["retire"]
    assert (retire["present"], retire["total"]) == (6, 7) and not retire["whole"]
    assert retire["differing"] == [
        [
            "is started with `--no-enable-flash-late-interaction`; the reference",
            "is started with `--disable-flash-late-interaction`; the reference",
        ]
    ]
    assert (
        "| 1 | `0001-backport-edited.patch` | partly upstream: re-cut | - | 6 of 7 added lines present upstream; "
        "not upstream: `is started with `--no-enable-flash-late-interaction`; the reference` |" in markdown
    )


def test_a_patch_whose_hunks_mostly_landed_is_a_retire_candidate(flipped):
    _, rows, _ = flipped
    row = rows["0002-partly-landed.patch"]
    assert [h["status"] for h in row["hunks"]] == ["conflict"] + ["already"] * 5
    assert (
        row["hunks"][0]["file"] == PROTOCOL
        and row["hunks"][0]["was"][0] == "    async def start_profile(self) -> None:"
    )
    assert (row["retire"]["present"], row["retire"]["total"]) == (16, 16) and row["retire"]["whole"]


def test_needs_a_look_only_with_a_reason(flipped):
    _, rows, _ = flipped
    assert rows["0006-look-enclosing.patch"]["look"] == [
        f"{EC_COMMON} hunk #1: upstream changed `def create_ec_shared_region` (line 96) at line 109",
        f"{EC_COMMON}: upstream removed `_get_encoder_cache_hidden_dim`, which the patch uses",
    ]
    # a docstring field of a long config class whose other members upstream changed: no look
    quiet = [name for name, row in rows.items() if row["verdict"] in ("exact", "partly-upstream") and row["look"]]
    assert quiet == []


def test_other_evidence(flipped):
    _, rows, _ = flipped
    [own] = rows["0007-new-file-rewrote.patch"]["hunks"]
    assert own["file"] == MIMO and own["text"].startswith("upstream has its own version: +")
    [gone] = rows["0008-medusa.patch"]["hunks"]
    assert (gone["file"], gone["status"]) == (MEDUSA, "gone")
    assert [h["status"] for h in rows["0010-partly-upstream.patch"]["hunks"]] == ["already", "exact"]
    assert rows["0010-partly-upstream.patch"]["hunks"][0]["file"] == POOLER
    [fuzz] = rows["0011-fuzz.patch"]["hunks"]
    assert fuzz["text"] == "applies only with fuzz 2: upstream changed line 36"
    assert [h["text"] for h in rows["0006-look-enclosing.patch"]["hunks"]] == ["applies at -25"]


def test_knobs_are_not_computed_when_the_series_did_not_land(flipped):
    report, _, markdown = flipped
    assert report["knobs"] == []
    assert report["knobs_skipped"] == "not computed: 8 patch(es) did not land on vllm 0.33.0 sdist"
    assert "## Environment knobs\n\nnot computed: 8 patch(es) did not land" in markdown


def test_the_table_shows_full_names_when_not_a_tty(real_series, tmp_path):
    """Piped output (no TTY, 80 columns by default) widens the table rather than truncating a name."""
    real_series = copy_series(real_series, tmp_path)
    long = "0012-exact.patch"
    patches = real_series.dist / "patches"
    longer = "0012-" + "a-very-long-patch-name-that-a-narrow-table-would-cut-short-" * 2 + "exact.patch"
    (patches / long).rename(patches / longer)
    series = patches / "series"
    series.write_text(series.read_text().replace(long, longer))
    proc = forklift("-c", str(real_series.dist), "flip", "0.33.0", env={"COLUMNS": None})
    assert proc.returncode == 1
    assert longer in proc.stdout
    assert "blocked by 0003-chain-a.patch (via 0004-chain-b.patch)" in proc.stdout
