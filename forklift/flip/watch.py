"""`forklift watch`: is there a newer upstream release than the pin? If so, flip onto it (a dry run) and write
the flip report and a ready pull-request body.

The newest release is the index's (the one pip would use) for a PyPI pin, the newest version tag of the
repository for a git pin; pre-releases, dev releases and yanked files do not count. The exit code says
what a scheduler does next (WATCH_EXIT)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from forklift.config import Config
from forklift.config.schema import GitPin, PypiPin
from forklift.errors import UsageError
from forklift.flip.report import FlipReport, render_markdown, requirement_lines
from forklift.flip.run import FlipResult, run_flip
from forklift.fsio import make_folder, write_atomic
from forklift.series.move import pin_version
from forklift.source.gitpin import remote_tags, resolve_url
from forklift.source.index import release_versions

if TYPE_CHECKING:
    from rich.console import Console

# What each outcome exits with; forklift's own errors keep theirs (1 failed, 2 bad usage or config).
CURRENT, MOVES, BLOCKED, UNREACHABLE = 0, 10, 11, 75  # 75: EX_TEMPFAIL, try again later
WATCH_EXIT = {
    CURRENT: "the pin is the newest release: nothing to do",
    MOVES: "a newer release, and the series moves onto it: open the pull request",
    BLOCKED: "a newer release the series does not apply to as it is: re-cut or retire patches first",
    UNREACHABLE: "the index or the repository did not answer: try again later",
}


@dataclass(frozen=True)
class WatchResult:
    pinned: str
    newest: str
    where: str  # the index page or repository read
    flip: FlipResult | None  # None: nothing newer
    written: list[Path]

    @property
    def exit_code(self) -> int:
        if self.flip is None:
            return CURRENT
        return BLOCKED if self.flip.report.blocked else MOVES


def _version(text: str) -> Version | None:
    try:
        return Version(text.removeprefix("v"))
    except InvalidVersion:
        return None


def newest_release(config: Config) -> tuple[str, str, str]:
    """(the pin's version or tag, the newest release's, where it was read); the newest is the pin's own when
    nothing is newer."""
    pin = config.data.upstream
    if isinstance(pin, PypiPin):
        names, where = release_versions(pin.package)
    elif isinstance(pin, GitPin):
        where = resolve_url(pin.url, config.root)
        names = remote_tags(where)
    else:
        raise UsageError(f"{config.path}: upstream.source is 'path': a local pin has no releases to watch")
    current = pin_version(pin)
    pinned = _version(current)
    if pinned is None:
        raise UsageError(f"{config.path}: the pin {current!r} is not a version forklift can compare releases with")
    releases = [(v, name) for name in names if (v := _version(name)) and not (v.is_prerelease or v.is_devrelease)]
    newer = max((r for r in releases if r[0] > pinned), default=None)
    return current, (newer[1] if newer else current), where


def run_watch(
    config: Config, out: Path, receipts_dir: Path | None = None, progress: Console | None = None
) -> WatchResult:
    """Compare the pin with the newest release; when newer, flip (dry run) and write the report and PR body."""
    pinned, newest, where = newest_release(config)
    if newest == pinned:
        return WatchResult(pinned, newest, where, None, [])
    flip = run_flip(config, newest, receipts_dir, progress=progress)
    make_folder(out)
    report, body = out / f"flip-{newest}.md", out / "pull-request.md"
    write_atomic(report, render_markdown(flip.report))
    write_atomic(body, pull_request_body(flip.report, pinned, newest, config.path.name))
    return WatchResult(pinned, newest, where, flip, [report, body])


def pull_request_body(report: FlipReport, pinned: str, newest: str, toml: str) -> str:
    """The pull request a maintainer opens to move the pin: what moves, what needs a look, the commands."""
    title = f"Move the pin from {pinned} to {newest}"
    lines = [f"# {title}", "", f"{report.new} is out; the pin is {report.old}.", ""]
    if report.blocked:
        names = ", ".join(f"`{p.name}`" for p in report.blocked)
        lines += [f"**Blocked:** {len(report.blocked)} patch(es) do not apply as they are: {names}.", ""]
        lines += ["Re-cut or retire them (see the flip report), then move the pin:", ""]
    else:
        lines += [f"The series moves: {report.summary()}.", ""]
    lines += [
        "```sh",
        f"forklift flip {newest} --write   # {toml}, the series and PATCHES.md move",
        "forklift check",
        "```",
        "",
    ]
    if report.needs_look:
        lines += ["## Needs a human look", ""] + [f"- `{p.name}`: {why}" for p in report.needs_look for why in p.look]
        lines.append("")
    lines += ["## Engine requirements", "", *requirement_lines(report, markdown=True), ""]
    lines += ["<details><summary>The flip report</summary>", "", render_markdown(report), "</details>"]
    return "\n".join(lines) + "\n"
