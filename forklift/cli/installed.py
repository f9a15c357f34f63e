"""`forklift apply --installed` and `forklift verify --installed`: the series on an installed engine."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from forklift.cli.app import app, console, load

PATH_ARG = typer.Argument(
    None, help="site-packages, the package folder, a venv or its python (default: the engine on PATH)"
)
INSTALLED = typer.Option(False, "--installed", help="work on the installed engine package (the only mode)")


def _package(path: Path | None):
    from forklift.engines import adapter
    from forklift.installed.package import locate
    from forklift.series.model import load_series

    config = load()
    engine = adapter(config.data.engine.kind)
    return locate(path, engine.package, engine.serve_script), load_series(config.series_dir)


def _require(installed: bool, command: str) -> None:
    if not installed:
        from forklift.errors import UsageError

        raise UsageError(f"forklift {command}: give --installed (the series is applied to trees by `forklift check`)")


@app.command()
def apply(installed: bool = INSTALLED, path: Path | None = PATH_ARG) -> None:
    """Apply the series to an installed engine, idempotently (patches already there are left alone)."""
    _require(installed, "apply")
    from forklift.installed.verify import apply_installed

    package, series = _package(path)
    result = apply_installed(package, series)
    for name in result.already:
        console.print(f"already applied: {name}", soft_wrap=True)
    for name in result.applied:
        console.print(f"applied: {name}", soft_wrap=True)
    console.print(f"{len(result.written)} file(s) written in {package.site}", soft_wrap=True)


@app.command()
def verify(
    installed: bool = INSTALLED,
    path: Path | None = PATH_ARG,
    as_json: bool = typer.Option(False, "--json", help="print the verdict as JSON"),
) -> None:
    """Check every file of an installed engine: pristine, patched as the series says, or unexpected."""
    _require(installed, "verify")
    from forklift.errors import ForkliftError
    from forklift.installed.verify import verify as verify_installed

    package, series = _package(path)
    state = verify_installed(package, series)
    if as_json:
        console.print_json(
            json.dumps(
                {
                    "ok": state.ok,
                    "site": str(package.site),
                    "distribution": package.dist_info.name,
                    "checked": state.checked,
                    "patches": [{"name": p.name, "state": p.state, "status": p.status} for p in state.patches],
                    "files": [{"path": f.path, "state": f.state, "why": f.why} for f in state.files],
                }
            )
        )
    else:
        for patch in state.patches:
            console.print(f"{patch.state:12} {patch.name}", soft_wrap=True, markup=False)
        for check in state.files:
            console.print(
                f"{check.state:12} {check.path}{'  (' + check.why + ')' if check.why else ''}",
                soft_wrap=True,
                markup=False,
            )
        console.print(f"{state.checked} files checked against {package.dist_info.name}/RECORD", soft_wrap=True)
    if not state.ok:
        raise ForkliftError(f"installed {package.package} does not match the pin plus the series: {state.summary()}")
