"""`forklift knobs`: the engine's environment registry, pristine vs patched, and reads that bypass it."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from forklift.cli.app import app, console, load


@app.command()
def knobs(
    lint: bool = typer.Option(False, "--lint", help="exit 1 if the series adds a bare read of an unregistered knob"),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
    tree: Path | None = typer.Option(None, "--tree", help="a source tree to read instead of the pinned upstream"),
    reads: bool = typer.Option(False, "--reads", help="list every bare read, not only those the series adds"),
) -> None:
    """Registered knobs before/after the series; bare VLLM_* reads outside the registry, with file:line."""
    from forklift.knobs.report import knob_report

    report = knob_report(load(), tree)
    diff = report.diff
    bad = diff.introduced_unregistered
    if as_json:
        console.print_json(
            json.dumps(
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
        )
    else:
        p, q = report.pristine, report.patched
        console.print(f"registered knobs: {len(p.names)} pristine -> {len(q.names)} patched", soft_wrap=True)
        console.print(
            f"added: {', '.join(diff.added) or 'none'}; removed: {', '.join(diff.removed) or 'none'}", soft_wrap=True
        )
        console.print(
            f"bare reads outside the registry: {len(p.bypass)} pristine ({len(p.unregistered)} unregistered)"
            f" -> {len(q.bypass)} patched ({len(q.unregistered)} unregistered)",
            soft_wrap=True,
        )
        for read in q.bypass if reads else diff.introduced:
            marker = "added by the series: " if read in diff.introduced else ""
            console.print(f"  {marker}{read}", soft_wrap=True, markup=False)
        for name in report.not_applied:
            console.print(f"[yellow]warning:[/] {name} does not apply: its knobs are not counted", soft_wrap=True)
    if lint and bad:
        from forklift.errors import ForkliftError

        raise ForkliftError(f"the series adds {len(bad)} bare read(s) of unregistered knobs, first: {bad[0]}")
