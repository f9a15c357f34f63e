"""Published digests: a `sha256sum` file (SHA256SUMS) that check holds the patch files to.

The format is GNU coreutils' `sha256sum` output, so `sha256sum -c SHA256SUMS` in the
same folder agrees: one `HEX  NAME` (or `HEX *NAME`) per line, names relative to the
file's folder. Every patch of the series must be listed; other files (an overlay's)
are held to their line when listed.
"""

from __future__ import annotations

import re
from pathlib import Path

from forklift.errors import ForkliftError

_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")


def parse_sums(text: str, where: Path) -> dict[str, str]:
    """name -> lowercase hex digest; a malformed or repeated line is one line naming file and line."""
    sums: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise ForkliftError(f"{where}:{number}: expected 'SHA256  NAME' (sha256sum's format), got {line[:80]!r}")
        name = m.group(2)
        if name in sums:
            raise ForkliftError(f"{where}:{number}: {name!r} is listed twice")
        sums[name] = m.group(1).lower()
    return sums


def digest_problems(
    published: dict[str, str], actual: dict[str, str | None], required: list[str]
) -> list[tuple[str, str]]:
    """(subject, message) per file whose digest differs from its published one, is missing, or is unlisted.

    `actual` maps each published name to the sha256 of the file now (None: no such file);
    `required` are the names that must be published (the series' patch files)."""
    problems = []
    for name, want in published.items():
        found = actual.get(name)
        if found is None:
            problems.append((name, f"listed with sha256 {want[:12]}... but no such file"))
        elif found != want:
            problems.append((name, f"sha256 {found} differs from the published {want}"))
    problems += [
        (name, "not listed: every patch file needs its published sha256") for name in required if name not in published
    ]
    return problems
