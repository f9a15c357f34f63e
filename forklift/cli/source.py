"""Commands of the source stage: `init`, `fetch`, and the `source` group (bind/verify the SOURCE file)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from forklift.cli.app import FORK, START, App, app, console, load, say
from forklift.errors import ForkliftError

if TYPE_CHECKING:
    from forklift.fork.binding import BindingFailure

source_app = App(help="Bind the release to the fork commit its series came from (the SOURCE file).")
app.add_typer(source_app, name="source", rich_help_panel=FORK)

RepoOption = Annotated[Path, typer.Option("--repo", help="the fork's git repository")]


@app.command(rich_help_panel=START)
def init(
    pypi: Annotated[
        str | None, typer.Option("--pypi", metavar="NAME==VERSION", help="pin a release from the index")
    ] = None,
    wheel: Annotated[
        bool, typer.Option("--wheel", help="with --pypi: pin the wheel for this machine, not the sdist")
    ] = False,
    git: Annotated[str | None, typer.Option("--git", metavar="URL", help="pin a git repository (with --tag)")] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="the tag; its commit is pinned")] = None,
    path: Annotated[Path | None, typer.Option("--path", help="pin a local tarball or folder by its sha256")] = None,
    folder: Annotated[Path, typer.Option("--dir", help="where to write forklift.toml and patches/series")] = Path("."),
) -> None:
    """Write forklift.toml (the resolved pin) and an empty patches/series; never overwrites forklift.toml."""
    from forklift.source.scaffold import init_distribution

    done = init_distribution(folder, pypi=pypi, wheel=wheel, git_url=git, tag=tag, path=str(path) if path else None)
    pin = "".join(f"\n  upstream.{key} = {value}" for key, value in done.upstream.items())
    say(f"wrote {done.config} and {done.series}{pin}")


@app.command(rich_help_panel=START)
def fetch() -> None:
    """Download, verify and extract the pinned upstream into the cache; print the tree's path and digest."""
    from forklift.source.materialize import pinned_tree

    tree = pinned_tree(load(), progress=console)
    say(f"{tree.label}\n  path   {tree.path}\n  digest {tree.digest}")  # one line each, so a path can be copied


def _report_binding(failures: list[BindingFailure]) -> None:
    for failure in failures:
        say(("FAIL", "red"), f" {failure}")
    if failures:
        raise typer.Exit(1)


@source_app.command("bind")
def source_bind(
    commit: Annotated[str, typer.Argument(help="the fork commit the series was exported from")],
    branch: Annotated[
        str, typer.Option("--branch", help="the published branch as a ref of the fork repo (origin/NAME)")
    ],
    tag: Annotated[
        str | None, typer.Option("--tag", help="upstream tag in the fork that must keep naming the base")
    ] = None,
    repo: RepoOption = Path("."),
) -> None:
    """Record COMMIT in SOURCE after checking it exists, is published, descends from the base, moves forward and
    holds exactly the series applied to the pin."""
    from forklift.fork.base import binding_base
    from forklift.fork.binding import SOURCE_FILE, SourceBinding, check_binding, load_binding
    from forklift.fork.repo import Git
    from forklift.fsio import write_atomic

    config = load()
    fork = Git(repo)
    fork.ensure_repo()
    path = config.root / SOURCE_FILE
    previous = load_binding(path).commit if path.exists() else None
    base, pinned_tag = binding_base(config, fork)
    binding = SourceBinding(commit=fork.commit_of(commit, "fork commit"), branch=branch, tag=tag or pinned_tag)
    _report_binding(check_binding(config, fork, binding, base, previous, progress=console))
    write_atomic(path, binding.render())
    say(f"wrote {path}: {binding.commit[:12]} on {branch}")


@source_app.command("verify")
def source_verify(repo: RepoOption = Path(".")) -> None:
    """Check SOURCE: the commit exists, is on the published branch, descends from the base, only moved forward,
    and its tree is the series applied to the pin."""
    from forklift.fork.base import binding_base
    from forklift.fork.binding import SOURCE_FILE, check_binding, load_binding, previous_commit
    from forklift.fork.repo import Git

    config = load()
    path = config.root / SOURCE_FILE
    binding = load_binding(path)
    fork = Git(repo)
    base, pinned_tag = binding_base(config, fork)
    if pinned_tag and not binding.tag:
        binding = replace(binding, tag=pinned_tag)
    _report_binding(check_binding(config, fork, binding, base, previous_commit(path, binding.commit), console))
    say(
        ("OK", "green"),
        f" {binding.commit[:12]} is published on {binding.branch}, descends from {base[:12]} and holds "
        "exactly the series",
    )


cache_app = App(help="The cache of upstream artifacts and pristine trees.")
app.add_typer(cache_app, name="cache", rich_help_panel=START)


@cache_app.command("verify")
def cache_verify() -> None:
    """Re-hash every cached tree against the listing recorded when it was built; remove each that changed."""
    from forklift.source.cache import default_cache

    cache = default_cache()
    results = cache.verify_all()
    for key, problem in results:
        say(("removed", "red") if problem else ("ok", "green"), f" {key}{': ' + problem if problem else ''}")
    bad = sum(1 for _, problem in results if problem)
    say(f"{len(results)} tree(s) in {cache.root}, {bad} removed")
    if bad:
        raise ForkliftError(f"{bad} cached tree(s) had changed and were removed; the next fetch rebuilds them")
