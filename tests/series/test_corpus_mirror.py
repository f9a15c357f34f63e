"""The corpus downloads from the system's own mirror: its apt sources read in both forms apt takes."""

from __future__ import annotations

import pytest

from tests.series.corpus import KEYRING, ArchiveUnreachable, system_mirror


def test_the_mirror_is_read_from_deb822_and_one_line_sources(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text("# nothing here\ndeb http://one.example/debian trixie main\n")
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n"
        "Signed-By: /keys/debian.gpg\n\nTypes: deb\nURIs: http://security.example\nSuites: bookworm-security\n"
        "Components: main\n"
    )
    assert system_mirror("bookworm", tmp_path) == ("http://mirror.example/debian", "/keys/debian.gpg")
    assert system_mirror("trixie", tmp_path) == ("http://one.example/debian", KEYRING)
    with pytest.raises(ArchiveUnreachable, match="no apt source for sid main"):
        system_mirror("sid", tmp_path)
