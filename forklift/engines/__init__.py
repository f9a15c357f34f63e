"""Engine adapters: the one place that knows an engine's log lines, knobs, CLI and metrics.

Everything else in forklift talks to an `EngineAdapter`, so a second engine
(SGLang) is a second module here, not edits across the stages.
"""

from __future__ import annotations

from forklift.engines.adapter import EngineAdapter, FactPattern, FatalPattern, ScanPattern
from forklift.engines.vllm import VLLM
from forklift.errors import UsageError

__all__ = ["DEFAULT_ENGINE", "EngineAdapter", "FactPattern", "FatalPattern", "ScanPattern", "engine_adapter"]

ADAPTERS = {VLLM.name: VLLM}
DEFAULT_ENGINE = VLLM.name  # the engine a bench, canary or profile means when it names none


def engine_adapter(kind: str) -> EngineAdapter:
    if kind in ADAPTERS:
        return ADAPTERS[kind]
    raise UsageError(f"engine.kind {kind!r}: no engine adapter (known: {', '.join(ADAPTERS)})")
