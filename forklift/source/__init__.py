"""Pristine upstream trees: PyPI sdists and wheels, git tags bound to commits, local tarballs and folders.

Everything is verified against forklift.toml before use and kept in a content-addressed cache.
Nothing is imported here (import from the modules): the cache and the folder digest load without the
config schema and pydantic, as a replayed check needs (series/resultcache.py).
"""

__all__ = ["cache", "download", "extract", "gitpin", "hashing", "index", "materialize", "scaffold"]
