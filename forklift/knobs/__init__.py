"""knobs: the engine's environment registry and the reads that bypass it, read from source with `ast`."""

from forklift.knobs.registry import Read, Registry, RegistryDiff, compare, registry

__all__ = ["Read", "Registry", "RegistryDiff", "compare", "registry"]
