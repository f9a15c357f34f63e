"""The one Markdown table writer (PATCHES.md, flip reports, campaign reports).

Bottom layer: imports nothing from forklift.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence


def cell(text: object, empty: str = "") -> str:
    """Text fit for one table cell: pipes escaped, newlines folded; `empty` stands in for blank text."""
    shown = "" if text is None else str(text)
    return shown.replace("|", "\\|").replace("\n", " ").strip() or empty


def table(
    header: Sequence[str],
    rows: Iterable[Sequence[object]],
    empty: str = "",
    escape: Callable[[object], str] | None = None,
) -> list[str]:
    """The lines of a Markdown table; every cell goes through `escape` (text from untrusted files), then cell()."""

    def line(cells: Sequence[object]) -> str:
        return "| " + " | ".join(cell(escape(c) if escape else c, empty) for c in cells) + " |"

    return [line(header), "|" + "---|" * len(header), *(line(r) for r in rows)]


def table_text(
    header: Sequence[str],
    rows: Iterable[Sequence[object]],
    empty: str = "",
    escape: Callable[[object], str] | None = None,
) -> str:
    """table() as one string."""
    return "\n".join(table(header, rows, empty, escape))
