"""bench: single stream, concurrency sweeps and batches over a workload; Prometheus deltas; bench receipts."""
