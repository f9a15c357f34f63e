"""Cold compile caches: each cache variable of the engine pointed at a fresh, empty folder.

A cold arm (`ladder --cold`, a campaign build with `cold = true`) measures what a first boot on a new
machine or a fresh cache volume pays: the engine's compile caches (for vLLM: its own, torch inductor's,
Triton's, FlashInfer's JIT and the CUDA driver's) start empty. The folders are kept and recorded with
the result: what they hold afterwards is what that boot compiled, the evidence a cache bisection reads.
"""

from __future__ import annotations

import tempfile
from pathlib import Path


def cold_caches(cache_env: tuple[str, ...], folder: Path) -> dict[str, str]:
    """Each variable of `cache_env` -> a new empty folder under `folder` (made here, one root per boot)."""
    folder.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="cold-", dir=folder))
    caches = {name: root / name.lower() for name in cache_env}
    for path in caches.values():
        path.mkdir()
    return {name: str(path) for name, path in caches.items()}
