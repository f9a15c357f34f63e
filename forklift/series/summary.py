"""`forklift check` as markdown: the table a CI job summary shows (GitHub's GITHUB_STEP_SUMMARY, a PR comment)."""

from __future__ import annotations

from forklift.mdtable import cell, table
from forklift.series.check import CheckReport


def check_markdown(report: CheckReport) -> str:
    """Verdict line, one row per patch (pass 1, pass 2 when it is a contract patch), then every finding."""
    standalone = {row.name: row.status for row in report.pass2}
    verdict = "OK" if report.ok else f"FAILED ({len(report.findings)} finding(s))"
    lines = [f"### forklift check — {cell(report.tree)}: {verdict}", ""]
    rows = [
        (str(number), row.name, row.status, standalone.get(row.name, "-"), f"+{sum(f.added for f in row.files)}")
        for number, row in enumerate(report.pass1, 1)
    ]
    rows += [("-", skip.name, "skipped", "-", skip.reason) for skip in report.skipped]
    lines += table(("#", "patch", "pass 1", "pass 2", "+"), rows)
    if report.findings:
        lines += ["", *(f"- **{cell(f.check)}** {cell(f.subject)}: {cell(f.message)}" for f in report.findings)]
    lines += ["", f"overlay hash: `{report.overlay_hash or 'none (nothing changed)'}`"]
    return "\n".join(lines) + "\n"
