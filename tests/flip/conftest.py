"""The flip tests' fixtures: a series cut from real vLLM releases (tests/flip/realseries.py)."""

from tests.flip.realseries import real_series, trees

__all__ = ["real_series", "trees"]
