"""forklift: carry a patched LLM inference engine across upstream releases, and prove every step."""

__version__ = "0.1.0"
