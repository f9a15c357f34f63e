"""Commands of the source stage: `fetch` (materialize the pinned tree) and `init` (start a distribution)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from forklift.cli.app import app, console, load


@app.command()
def fetch() -> None:
    """Download, verify and extract the pinned upstream into the cache; print the tree's path and digest."""
    from forklift.source import materialize

    config = load()
    tree = materialize(config.data.upstream, config.root, progress=console)
    # soft_wrap: a long path stays on one line, so it can be copied
    console.print(f"{tree.label}\n  path   {tree.path}\n  digest {tree.digest}", soft_wrap=True)


@app.command()
def init(
    pypi: Optional[str] = typer.Option(None, "--pypi", metavar="NAME==VERSION", help="pin a release from the index"),
    wheel: bool = typer.Option(False, "--wheel", help="with --pypi: pin the wheel for this machine, not the sdist"),
    git: Optional[str] = typer.Option(None, "--git", metavar="URL", help="pin a git repository (with --tag)"),
    tag: Optional[str] = typer.Option(None, "--tag", help="the tag; its commit is pinned"),
    path: Optional[Path] = typer.Option(None, "--path", help="pin a local tarball or folder by its sha256"),
    folder: Path = typer.Option(Path("."), "--dir", help="where to write forklift.toml and patches/series"),
) -> None:
    """Write forklift.toml (the resolved pin) and an empty patches/series; never overwrites forklift.toml."""
    from forklift.source.scaffold import init_distribution

    done = init_distribution(folder, pypi=pypi, wheel=wheel, git_url=git, tag=tag, path=str(path) if path else None)
    pin = "".join(f"\n  upstream.{key} = {value}" for key, value in done.upstream.items())
    console.print(f"wrote {done.config} and {done.series}{pin}", soft_wrap=True)


cache_app = typer.Typer(help="The cache of upstream artifacts and pristine trees.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")


@cache_app.command("verify")
def cache_verify() -> None:
    """Re-hash every cached tree against the listing recorded when it was built; remove each that changed."""
    from forklift.errors import ForkliftError
    from forklift.source.cache import default_cache

    cache = default_cache()
    results = cache.verify_all()
    for key, problem in results:
        console.print(
            f"{'[red]removed[/]' if problem else '[green]ok[/]'} {key}{': ' + problem if problem else ''}",
            soft_wrap=True,
        )
    bad = sum(1 for _, problem in results if problem)
    console.print(f"{len(results)} tree(s) in {cache.root}, {bad} removed", soft_wrap=True)
    if bad:
        raise ForkliftError(f"{bad} cached tree(s) had changed and were removed; the next fetch rebuilds them")
