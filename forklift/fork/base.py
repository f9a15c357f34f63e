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
from forklift.fork.repo import Git
from forklift.series.model import SERIES_FILE

PATH_BASE_TAG = "forklift-base"  # a path pin has no version to name its tag after


def base_tag(pin: PypiPin | PathPin) -> str:
    """The tag a fork started from this pin gives its base commit."""
    return f"v{pin.version}" if isinstance(pin, PypiPin) else PATH_BASE_TAG


def find_base(config: Config, given: str | None = None, fork: Git | None = None) -> str:
    """The git pin's commit; else `given` (--base), the recorded base, or the fork's base tag, in that order.
    A recorded base that another release's tag names (the series' base line and the pin disagree) is refused."""
    pin = config.data.upstream
    if isinstance(pin, GitPin) and given and given != pin.commit:
        raise UsageError(f"--base {given} contradicts the git pin's commit {pin.commit} in {config.path}")
    if given:
        return given
    problem = base_mismatch(config, fork)
    if problem:
        raise UsageError(problem)
    if isinstance(pin, GitPin):
        return pin.commit
    found = recorded_base(config.series_dir)
    if not found and fork is not None:
        found = fork.resolve(f"refs/tags/{base_tag(pin)}")
    if not found:
        raise UsageError(
            f"{config.path}: a {pin.source} pin names no commit of the fork: pass --base REV (the fork "
            "commit holding the pristine tree); export records it in patches/series"
        )
    return found


def base_mismatch(config: Config, fork: Git | None) -> str | None:
    """Why the series' `# forklift-base:` line and the pin name different releases, or None.

    A base line the pin's own tag (or a git pin's commit) names, or one that no release tag names
    (a base the user chose), agrees; one that another release's tag names does not."""
    recorded = recorded_base(config.series_dir)
    pin = config.data.upstream
    if not recorded:
        return None
    where = f"{config.series_dir / SERIES_FILE}"
    if isinstance(pin, GitPin):
        if recorded == pin.commit:
            return None
        return (
            f"{where}: the base line names {recorded[:12]}, but {config.path} pins {pin.tag} = {pin.commit[:12]}: "
            "the series was exported on another release (move the fork with `forklift rebase`, then export)"
        )
    if fork is None or fork.run("rev-parse", "--git-dir", check=False).returncode != 0:
        return None
    tag = base_tag(pin)
    tagged = fork.resolve(f"refs/tags/{tag}")
    others = [t for t in fork.text("tag", "--points-at", recorded).split() if t != tag]
    if tagged == recorded or not others:
        return None
    pinned = f"tag {tag} = {tagged[:12]}" if tagged else f"no tag {tag} in {fork.repo}"
    return (
        f"{where}: the base line names {recorded[:12]} (tagged {', '.join(others)}), but {config.path} pins "
        f"{pin.version if isinstance(pin, PypiPin) else pin.path} ({pinned}): the series and the pin name different "
        "releases (move the fork with `forklift rebase`, then export)"
    )


def binding_base(config: Config, fork: Git) -> tuple[str, str | None]:
    """(base commit, upstream tag that must still name it) for the source-binding checks."""
    pin = config.data.upstream
    return (pin.commit, pin.tag) if isinstance(pin, GitPin) else (find_base(config, None, fork), None)
