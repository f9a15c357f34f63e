"""Patch series: parse headers and hunks, apply them in memory (the pure engine), check and render the series."""

__all__ = [
    "apply",
    "check",
    "diff",
    "digests",
    "files",
    "gate",
    "headers",
    "junit",
    "lines",
    "manifest",
    "model",
    "move",
    "render",
    "summary",
    "tree",
]  # the public modules; import what you need from them
