"""`forklift init`: start a distribution in one command.

Resolves the pin (the index's sha256 of the artifact, the commit a tag names, the hash of a
local tarball or folder), then writes forklift.toml and an empty ``patches/series``. The
config text is validated with the real schema before anything is written, an existing
forklift.toml is never overwritten, and an existing series is kept (a quilt series moves in as is).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from forklift.config.load import parse_config
from forklift.errors import UsageError
from forklift.fsio import make_folder, writing
from forklift.source import gitpin
from forklift.source.hashing import directory_digest, file_sha256, pinnable_kind
from forklift.source.index import resolve_pypi_file

SERIES_HEADER = """\
# quilt series: one patch file name per line (files in this folder), applied in this order.
# Blank lines and lines starting with '#' are ignored.
"""


@dataclass(frozen=True)
class Initialized:
    config: Path
    series: Path
    upstream: dict[str, str]


def init_distribution(
    folder: Path,
    *,
    pypi: str | None = None,
    wheel: bool = False,
    git_url: str | None = None,
    tag: str | None = None,
    path: str | None = None,
    index_url: str | None = None,
) -> Initialized:
    """Write forklift.toml and patches/series in `folder` for exactly one of pypi / git_url+tag / path."""
    config = folder / "forklift.toml"
    if config.exists():
        raise UsageError(f"{config} already exists; refusing to overwrite it")
    upstream, name = _resolve(folder, pypi, wheel, git_url, tag, path, index_url)
    kind = "vllm" if canonicalize_name(name) == "vllm" else "generic"
    text = render_config(kind, upstream)
    parse_config(text, config)  # the schema is the judge: never write a config it would refuse
    series = folder / "patches" / "series"
    with writing(folder):
        make_folder(series.parent)  # creates `folder` too
        if not series.exists():
            series.write_text(SERIES_HEADER, encoding="utf-8")
        with open(config, "x", encoding="utf-8") as handle:  # "x": a racing writer still cannot be overwritten
            handle.write(text)
    return Initialized(config, series, upstream)


def _resolve(
    folder: Path,
    pypi: str | None,
    wheel: bool,
    git_url: str | None,
    tag: str | None,
    path: str | None,
    index_url: str | None,
) -> tuple[dict[str, str], str]:
    """The [upstream] table and the project's name, for the one source given."""
    given = [flag for flag, value in (("--pypi", pypi), ("--git", git_url), ("--path", path)) if value]
    if len(given) != 1:
        raise UsageError("give exactly one of --pypi NAME==VERSION, --git URL --tag TAG, --path FILE")
    if wheel and not pypi:
        raise UsageError("--wheel goes with --pypi")
    if bool(tag) != bool(git_url):
        raise UsageError("--git and --tag go together")
    if pypi:
        package, sep, version = pypi.partition("==")
        if not sep or not package.strip() or not version.strip():
            raise UsageError(f"--pypi {pypi!r}: expected NAME==VERSION, e.g. vllm==0.32.0")
        package, version = package.strip(), version.strip()
        file = resolve_pypi_file(package, version, index_url=index_url, wheel=wheel)
        if not file.sha256:
            raise UsageError(f"the index lists no sha256 for {file.filename}; cannot pin it")
        pin = {"source": "pypi", "package": package, "version": version}
        if wheel:
            pin["filename"] = file.filename
        return {**pin, "sha256": file.sha256}, package
    if git_url and tag:  # together, as checked above
        url = gitpin.resolve_url(git_url, Path.cwd())  # a local path as typed, from where the user stands
        commit = gitpin.remote_tag_commit(url, tag)
        if url != git_url:  # stored like --path: forklift.toml resolves it from its own folder
            url = _relative_if_inside(Path(url), folder)
        repo = re.sub(r"\.git$", "", git_url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1])
        return {"source": "git", "url": url, "tag": tag, "commit": commit}, repo
    assert path is not None  # exactly one source was given
    source = Path(path).expanduser().resolve()
    if not source.exists():
        raise UsageError(f"--path {path}: no such file or folder")
    digest = directory_digest(source) if pinnable_kind(source) == "dir" else file_sha256(source)
    stored = os.path.relpath(source, folder.resolve()) if not Path(path).expanduser().is_absolute() else None
    where = Path(stored).as_posix() if stored else _relative_if_inside(source, folder)
    return {"source": "path", "path": where, "sha256": digest}, _project_name(source)


def render_config(engine_kind: str, upstream: dict[str, str]) -> str:
    """forklift.toml text (json.dumps of a str is a valid TOML basic string with ensure_ascii off)."""
    pin = "\n".join(f"{key} = {json.dumps(value, ensure_ascii=False)}" for key, value in upstream.items())
    return (
        "# forklift.toml: written by `forklift init`. The pin is verified on every fetch.\n\n"
        f'[engine]\nkind = "{engine_kind}"\n\n'
        f"[upstream]\n{pin}\n\n"
        '[series]\ndir = "patches"\ncontract = []\n'
    )


def _relative_if_inside(source: Path, folder: Path) -> str:
    """Relative to the distribution when the source lives inside it (portable), else absolute
    (a --path given relative is stored relative to forklift.toml wherever it lies)."""
    try:
        return source.relative_to(folder.resolve()).as_posix()
    except ValueError:
        return str(source)


def _project_name(source: Path) -> str:
    """ "vllm" from vllm-0.32.0.tar.gz or a folder vllm-0.32.0 / vllm."""
    stem = re.sub(r"\.(tar(\.\w+)?|tgz|zip)$", "", source.name)
    return re.split(r"-\d", stem, maxsplit=1)[0]
