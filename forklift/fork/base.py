"""The base: the fork commit holding the pristine tree a series applies on, found the same way for every pin.

A git pin names it (its commit). A PyPI or path pin has no git history, so the
base is the one --base names, else the one the last export recorded in
patches/series, else the commit tagged by `forklift import` when it started the
fork (v0.32.0 for a PyPI pin, as vLLM tags releases; forklift-base for a path pin).
"""

from __future__ import annotations

from forklift.config import Config
from forklift.config.schema import GitPin, PathPin, PypiPin
from forklift.errors import UsageError
from forklift.fork.export import recorded_base
from forklift.fork.git import Git

PATH_BASE_TAG = "forklift-base"  # a path pin has no version to name its tag after


def base_tag(pin: PypiPin | PathPin) -> str:
    """The tag a fork started from this pin gives its base commit."""
    return f"v{pin.version}" if isinstance(pin, PypiPin) else PATH_BASE_TAG


def find_base(config: Config, given: str | None = None, fork: Git | None = None) -> str:
    """The git pin's commit; else `given` (--base), the recorded base, or the fork's base tag, in that order."""
    pin = config.data.upstream
    if isinstance(pin, GitPin):
        if given and given != pin.commit:
            raise UsageError(f"--base {given} contradicts the git pin's commit {pin.commit} in {config.path}")
        return pin.commit
    found = given or recorded_base(config.series_dir)
    if not found and fork is not None:
        found = fork.resolve(f"refs/tags/{base_tag(pin)}")
    if not found:
        raise UsageError(
            f"{config.path}: a {pin.source} pin names no commit of the fork: pass --base REV (the fork "
            "commit holding the pristine tree); export records it in patches/series"
        )
    return found


def binding_base(config: Config, fork: Git) -> tuple[str, str | None]:
    """(base commit, upstream tag that must still name it) for the source-binding checks."""
    pin = config.data.upstream
    return (pin.commit, pin.tag) if isinstance(pin, GitPin) else (find_base(config, None, fork), None)
