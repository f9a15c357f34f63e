"""Patch series: parse headers and hunks, apply them in memory (the pure engine), check and render the series."""
