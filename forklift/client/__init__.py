"""The async OpenAI-compatible streaming client and the per-request records it produces."""
