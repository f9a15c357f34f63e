"""installed: an engine installed in site-packages checked against its wheel's RECORD and the series."""
