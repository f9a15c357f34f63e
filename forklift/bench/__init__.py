"""bench: single stream, concurrency sweeps and batches over a workload; Prometheus deltas; bench receipts."""

__all__ = [
    "aggregate",
    "gpu",
    "histograms",
    "importer",
    "metrics",
    "options",
    "recorder",
    "runner",
    "schema",
    "session",
    "steady",
]  # the public modules; import what you need from them
