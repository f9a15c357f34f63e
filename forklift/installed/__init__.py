"""installed: an engine installed in site-packages checked against its wheel's RECORD and the series."""

__all__ = ["package", "stamp", "verify"]  # the public modules; import what you need from them
