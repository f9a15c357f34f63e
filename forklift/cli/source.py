"""Commands of the source stage: `fetch` (materialize the pinned tree) and `init` (start a distribution)."""

from __future__ import annotations

from pathlib import Path

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
    pypi: str | None = typer.Option(None, "--pypi", metavar="NAME==VERSION", help="pin a release from the index"),
    wheel: bool = typer.Option(False, "--wheel", help="with --pypi: pin the wheel for this machine, not the sdist"),
    git: str | None = typer.Option(None, "--git", metavar="URL", help="pin a git repository (with --tag)"),
    tag: str | None = typer.Option(None, "--tag", help="the tag; its commit is pinned"),
    path: Path | None = typer.Option(None, "--path", help="pin a local tarball or folder by its sha256"),
    folder: Path = typer.Option(Path("."), "--dir", help="where to write forklift.toml and patches/series"),
) -> None:
    """Write forklift.toml (the resolved pin) and an empty patches/series; never overwrites forklift.toml."""
    from forklift.source.scaffold import init_distribution

    done = init_distribution(folder, pypi=pypi, wheel=wheel, git_url=git, tag=tag, path=str(path) if path else None)
    pin = "".join(f"\n  upstream.{key} = {value}" for key, value in done.upstream.items())
    console.print(f"wrote {done.config} and {done.series}{pin}", soft_wrap=True)
