"""The fork round-trip: export a fork branch as a series, import it back, replay identity, source binding."""

__all__ = [
    "base",
    "binding",
    "create",
    "export",
    "importer",
    "rebase",
    "replay",
    "repo",
    "upstream",
]  # the public modules; import what you need from them
