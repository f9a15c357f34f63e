"""Pristine upstream trees: PyPI sdists and wheels, git tags bound to commits, local tarballs and folders.

Everything is verified against forklift.toml before use and kept in a content-addressed cache.
"""

from forklift.source.cache import Cache, default_cache
from forklift.source.index import IndexFile, resolve_pypi_file
from forklift.source.materialize import Tree, materialize, materialize_ref, pinned_tree

__all__ = [
    "Cache",
    "IndexFile",
    "Tree",
    "default_cache",
    "materialize",
    "materialize_ref",
    "pinned_tree",
    "resolve_pypi_file",
]
