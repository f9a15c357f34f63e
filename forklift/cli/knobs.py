"""`forklift knobs`: the engine's environment registry, pristine vs patched, and reads that bypass it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from forklift.cli.app import ENGINE, JsonOption, app, load, print_json, say, warn


@app.command(rich_help_panel=ENGINE)
def knobs(
    lint: Annotated[
        bool, typer.Option("--lint", help="exit 1 if the series adds a bare read of an unregistered knob")
    ] = False,
    as_json: JsonOption = False,
    tree: Annotated[
        Path | None, typer.Option("--tree", help="a source tree to read instead of the pinned upstream")
    ] = None,
    reads: Annotated[
        bool, typer.Option("--reads", help="list every bare read, not only those the series adds")
    ] = False,
) -> None:
    """Registered knobs before/after the series; bare VLLM_* reads outside the registry, with file:line."""
    from forklift.knobs.report import knob_report

    report = knob_report(load(), tree)
    diff = report.diff
    bad = diff.introduced_unregistered
    if as_json:
        print_json(
            {
                "tree": str(report.tree),
                "pristine": {
                    "registered": len(report.pristine.names),
                    "bare_reads": len(report.pristine.bypass),
                    "unregistered_reads": len(report.pristine.unregistered),
                },
                "patched": {
                    "registered": len(report.patched.names),
                    "bare_reads": len(report.patched.bypass),
                    "unregistered_reads": len(report.patched.unregistered),
                },
                "added": list(diff.added),
                "removed": list(diff.removed),
                "introduced_reads": [str(r) for r in diff.introduced],
                "not_applied": report.not_applied,
                "lint_ok": not bad,
            }
        )
    else:
        p, q = report.pristine, report.patched
        say(f"registered knobs: {len(p.names)} pristine -> {len(q.names)} patched")
        say(f"added: {', '.join(diff.added) or 'none'}; removed: {', '.join(diff.removed) or 'none'}")
        say(
            f"bare reads outside the registry: {len(p.bypass)} pristine ({len(p.unregistered)} unregistered)"
            f" -> {len(q.bypass)} patched ({len(q.unregistered)} unregistered)"
        )
        for read in q.bypass if reads else diff.introduced:
            marker = "added by the series: " if read in diff.introduced else ""
            say(f"  {marker}{read}")
        for name in report.not_applied:
            warn(f"{name} does not apply: its knobs are not counted")
    if lint and bad:
        from forklift.errors import ForkliftError

        raise ForkliftError(f"the series adds {len(bad)} bare read(s) of unregistered knobs, first: {bad[0]}")
