"""The TOML reader every stage uses: the standard library's from Python 3.11, tomli before."""

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

__all__ = ["tomllib"]
