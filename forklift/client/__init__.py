"""The async OpenAI-compatible streaming client and the per-request records it produces."""

__all__ = ["records", "sse", "stream"]  # the public modules; import what you need from them
