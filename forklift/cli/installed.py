"""`forklift apply` and `forklift verify`: the series on an installed engine package."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from forklift.cli.app import ENGINE, JsonOption, app, load, print_json, say

if TYPE_CHECKING:
    from forklift.installed.package import InstalledPackage
    from forklift.series.model import Series

PathArgument = Annotated[
    Path | None,
    typer.Argument(help="site-packages, the package folder, a venv or its python (default: the engine on PATH)"),
]
# Installed engines are the only thing these commands work on; the flag is accepted (and hidden) so
# scripts written as `apply --installed` keep running.
InstalledFlag = Annotated[bool, typer.Option("--installed", hidden=True)]


def _package(path: Path | None) -> tuple[InstalledPackage, Series]:
    from forklift.engines import engine_adapter
    from forklift.installed.package import locate
    from forklift.series.gate import configured_series

    config = load()
    engine = engine_adapter(config.data.engine.kind)
    return locate(path, engine.package, engine.serve_script), configured_series(config)


@app.command(rich_help_panel=ENGINE)
def apply(path: PathArgument = None, _installed: InstalledFlag = False) -> None:
    """Apply the series to an installed engine, idempotently (patches already there are left alone)."""
    from forklift.installed.verify import apply_installed

    package, series = _package(path)
    result = apply_installed(package, series)
    for name in result.already:
        say(f"already applied: {name}")
    for name in result.applied:
        say(f"applied: {name}")
    say(f"{len(result.written)} file(s) written in {package.site}")


@app.command(rich_help_panel=ENGINE)
def verify(
    path: PathArgument = None,
    as_json: JsonOption = False,
    trimmed: Annotated[
        bool,
        typer.Option("--trimmed", help="a trimmed install: RECORD files absent from disk are counted, not failed"),
    ] = False,
    image: Annotated[
        Path | None,
        typer.Option("--image", help="an OCI image layout or docker/podman save archive (folder or tar), read offline"),
    ] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="with --image: which image of several")] = None,
    _installed: InstalledFlag = False,
) -> None:
    """Check every file of an installed engine (or the one in an image): pristine, patched as the series says, or unexpected."""
    from forklift.errors import ForkliftError, UsageError
    from forklift.installed.verify import verify_installed

    if image is not None:
        if path is not None:
            raise UsageError("give PATH or --image ARCHIVE, not both")
        _verify_image(image, tag, trimmed, as_json)
        return
    if tag is not None:
        raise UsageError("--tag goes with --image")
    package, series = _package(path)
    state = verify_installed(package, series, trimmed=trimmed)
    if as_json:
        print_json(
            {
                "ok": state.ok,
                "site": str(package.site),
                "distribution": package.dist_info.name,
                "checked": state.checked,
                "absent": state.absent,
                "patches": [{"name": p.name, "state": p.state, "status": p.status} for p in state.patches],
                "files": [{"path": f.path, "state": f.state, "why": f.why} for f in state.files],
            }
        )
    else:
        for patch in state.patches:
            say(f"{patch.state:12} {patch.name}")
        for check in state.files:
            if check.state == "absent":
                continue
            say(f"{check.state:12} {check.path}{'  (' + check.why + ')' if check.why else ''}")
        say(f"{state.checked} files checked against {package.dist_info.name}/RECORD")
        if state.absent:
            say(f"{state.absent} file(s) of the RECORD absent (trimmed install): not checked")
    if not state.ok:
        raise ForkliftError(f"installed {package.package} does not match the pin plus the series: {state.summary()}")


def _verify_image(archive: Path, tag: str | None, trimmed: bool, as_json: bool) -> None:
    from forklift.errors import ForkliftError
    from forklift.ship.verify import verify_image
    from forklift.textsafe import terminal

    check = verify_image(load(), archive, tag, trimmed)
    state = check.state
    if as_json:
        print_json(
            {
                "ok": check.ok,
                "image_id": check.image.image_id,
                "format": check.image.format,
                "site": check.site,
                "interpreter": check.interpreter,
                "distribution": state.package.dist_info.name,
                "checked": state.checked,
                "patches": [{"name": p.name, "state": p.state} for p in state.patches],
                "files": [{"path": f.path, "state": f.state, "why": f.why} for f in state.files],
                "labels": {"expected": check.expected, "found": check.image.labels},
                "label_problems": check.label_problems,
            }
        )
    else:
        # names and labels come from the image: escaped, so none can print a line of its own
        for patch in state.patches:
            say(f"{patch.state:12} {terminal(patch.name)}")
        for file in state.files:
            if file.state != "absent":
                say(f"{file.state:12} {terminal(file.path)}{'  (' + terminal(file.why) + ')' if file.why else ''}")
        for key, want in check.expected.items():
            found = check.image.labels.get(key)
            say(
                f"{'label' if found == want else 'LABEL':12} {key}={terminal(found) if found is not None else '(missing)'}"
            )
        python = f", imported by {terminal(check.interpreter)}" if check.interpreter else ""
        say(
            f"{state.checked} files checked against {terminal(state.package.dist_info.name)}/RECORD in"
            f" /{terminal(check.site)}{python} of image {check.image.image_id}"
            f" ({check.image.format}, {len(check.image.layers)} layers)"
        )
    if not check.ok:
        raise ForkliftError(f"image {archive}: {terminal(check.summary())}")
