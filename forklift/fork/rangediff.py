"""Two versions of a series compared patch by patch, as `git range-diff` compares two ranges of commits.

Each side (a distribution folder, a series folder, or a revision of the distribution's own repository) becomes
a range of synthetic commits in a scratch repository: its pristine base (only the files its patches touch, as
its pin ships them), then one commit per patch, made exactly as `forklift import` makes them (its message and
author from the header). `git range-diff` itself then pairs the patches and shows each one's interdiff, so the
output is git's, and equal to git range-diff over two fork branches imported from the two series.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from forklift.config import Config, load_config
from forklift.errors import UsageError
from forklift.fork.create import create_fork, release_commit
from forklift.fork.importer import import_series
from forklift.fork.repo import Git
from forklift.git import temporary_index
from forklift.series.gate import configured_series
from forklift.series.model import SERIES_FILE, Series, load_series
from forklift.source.materialize import Tree, materialize

if TYPE_CHECKING:
    from rich.console import Console

# git range-diff's pair line: "1:  1a2b3c4 = 1:  5d6e7f8 subject" ('-' and dashes for a missing side)
_PAIR = re.compile(r"^\s*(?:\d+|-):\s+(?:[0-9a-f]+|-+)\s+([=!<>])\s+(?:\d+|-):\s+(?:[0-9a-f]+|-+)\s+(.*)$")
MARKS = {"=": "unchanged", "!": "changed", "<": "only in OLD", ">": "only in NEW"}


@dataclass(frozen=True)
class Side:
    label: str
    series: Series
    tree: Tree  # the pristine tree its pin names


@dataclass(frozen=True)
class RangeDiff:
    text: str  # git range-diff's output
    pairs: tuple[tuple[str, str], ...]  # (mark, subject) per line git pairs

    def summary(self) -> str:
        counts = [f"{sum(1 for m, _ in self.pairs if m == mark)} {word}" for mark, word in MARKS.items()]
        return f"{len(self.pairs)} patches: " + ", ".join(c for c in counts if not c.startswith("0 "))


def side(config: Config, spec: str, scratch: Path, progress: Console | None = None) -> Side:
    """OLD or NEW: a folder holding forklift.toml, a series folder (on this distribution's pin), or a revision
    of the distribution's git repository (its forklift.toml and series as committed there)."""
    path = Path(spec)
    if path.is_dir() and (path / "forklift.toml").is_file():
        chosen = load_config(path / "forklift.toml")
        series = configured_series(chosen)
    elif path.is_dir() and (path / SERIES_FILE).is_file():
        chosen, conf = config, config.data.series
        series = load_series(path, unlisted=conf.unlisted, root=conf.root, applier=conf.applier)
    elif path.exists():
        raise UsageError(f"{spec}: neither a distribution (forklift.toml) nor a series folder (a series file)")
    else:
        chosen = load_config(checked_out(config, spec, scratch) / config.path.name)
        series = configured_series(chosen)
    tree = materialize(chosen.data.upstream, chosen.root, progress=progress)
    return Side(f"{spec} ({tree.label})", series, tree)


def checked_out(config: Config, rev: str, scratch: Path) -> Path:
    """The distribution's folder as revision `rev` of its repository holds it, written below `scratch`."""
    dist = Git(config.root)
    if dist.run("rev-parse", "--git-dir", check=False).returncode != 0:
        raise UsageError(f"{rev}: no such folder, and {config.root} is not a git repository to read a revision of")
    commit = dist.resolve(rev)
    if commit is None:
        raise UsageError(f"{rev}: no such folder, nor a revision of {config.root}")
    prefix = dist.text("rev-parse", "--show-prefix").strip()
    top = Git(Path(dist.text("rev-parse", "--show-toplevel").strip()))  # checkout-index -a reads below its cwd
    if top.run("cat-file", "-e", f"{commit}:{prefix}{config.path.name}", check=False).returncode != 0:
        raise UsageError(f"{rev}: {prefix}{config.path.name} is not in that revision of {config.root}")
    out = Path(tempfile.mkdtemp(prefix="rev-", dir=scratch))
    with temporary_index(scratch) as env:  # the repository's own index and work tree are never touched
        top.run("read-tree", f"{commit}:{prefix}", env=env)
        top.run("checkout-index", "-a", f"--prefix={out}/", env=env)
    return out


def _base(tree: Path, series: Series, where: Path) -> Path:
    """The pristine files the series touches (a pristine base of their own: the range's diffs need no other)."""
    where.mkdir()
    for name in sorted({path for patch in series.patches for path in patch.paths}):
        source = tree / name
        if source.is_file() or source.is_symlink():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, where / name, follow_symlinks=False)
    return where


def range_diff(old: Side, new: Side, scratch: Path) -> RangeDiff:
    """git range-diff of the two series, each as commits on its own pristine base."""
    git, old_base = create_fork(_base(old.tree.path, old.series, scratch / "old"), scratch / "repo", "old", old.label)
    import_series(git, old_base, "old", old.series.patches)
    new_base = release_commit(git, _base(new.tree.path, new.series, scratch / "new"), "new", new.label)
    import_series(git, new_base, "new", new.series.patches)
    text = git.text("range-diff", "--no-color", "refs/tags/old..refs/heads/old", "refs/tags/new..refs/heads/new")
    pairs = tuple((m.group(1), m.group(2)) for line in text.splitlines() if (m := _PAIR.match(line)))
    return RangeDiff(text, pairs)
