"""The flip report: one record for the table, the JSON, the receipt body and the markdown for the PR."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pydantic import BaseModel, Field

from forklift.flip.triage import BLOCKING, SHOWN, PatchTriage
from forklift.mdtable import table
from forklift.source.requirements import RequirementChange
from forklift.textsafe import markdown as markdown_text

VERDICT_TEXT = {
    "exact": "applies exactly",
    "offset": "applies at an offset",
    "fuzz": "applies only with fuzz",
    "already-upstream": "already upstream: retire",
    "partly-upstream": "partly upstream",
    "recut": "partly upstream: re-cut",
    "retire-candidate": "retire candidate",
    "upstream-own": "upstream has its own version",
    "file-gone": "file gone upstream",
    "blocked": "blocked",
    "conflict": "conflicts",
    "skipped": "skipped",
}


class HunkNote(BaseModel):
    file: str
    index: int
    status: str  # exact offset fuzz already conflict blocked gone own-version
    text: str
    line: int | None = None
    was: list[str] = Field(default_factory=list)
    now: list[str] = Field(default_factory=list)
    blocked_by: str | None = None

    def line_text(self) -> str:
        return f"{self.file} hunk #{self.index}: {self.text}"


class RetireNote(BaseModel):
    present: int
    total: int
    differing: list[tuple[str, str | None]] = Field(default_factory=list)  # (patch line, upstream's nearest)
    upstream_hunks: list[str] = Field(default_factory=list)  # 'file hunk #N' the new release has whole
    whole: bool = False

    def summary(self) -> str:
        """'6 of 7 added lines present upstream; upstream has f.py hunk #2 (drop it); not upstream: `x`'."""
        parts = [f"{self.present} of {self.total} added lines present upstream"]
        if self.whole:
            return parts[0] + "; every hunk's change is upstream"
        if self.upstream_hunks:
            parts.append(f"upstream has {', '.join(self.upstream_hunks)}: re-cut without them (drop them)")
        if self.differing:
            parts.append("not upstream: " + ", ".join(f"`{line}`" for line, _ in self.differing[:SHOWN]))
        return "; ".join(parts)


class FlipRow(BaseModel):
    name: str
    verdict: str
    description: str = ""
    files: list[str]
    hunks: list[HunkNote]
    blocked_by: str | None = None
    via: str | None = None
    look: list[str] = Field(default_factory=list)  # why a patch that applies needs a human look
    retire: RetireNote | None = None
    skipped: str | None = None  # a series entry the series skips, with its reason
    retires_when: str = ""  # the patch's Retires-When: header, shown beside its verdict
    carried_by: str | None = None  # a retired patch's upstream commit (its patch id): "SHA12 subject"

    @classmethod
    def of(cls, t: PatchTriage, description: str, retires_when: str = "") -> FlipRow:
        return cls(
            name=t.name,
            verdict=t.verdict,
            description=description,
            retires_when=retires_when,
            files=list(t.files),
            hunks=[HunkNote(**asdict(h)) for h in t.hunks],
            blocked_by=t.blocked_by,
            via=t.via,
            look=list(t.look),
            retire=RetireNote(**asdict(t.retire)) if t.retire else None,
        )

    def verdict_text(self) -> str:
        if self.skipped is not None:
            return f"skipped: {self.skipped}"
        if self.verdict == "blocked":
            text = f"blocked by {self.blocked_by}" + (f" (via {self.via})" if self.via else "")
        else:
            text = VERDICT_TEXT[self.verdict]
        return text + (f" (retires when: {self.retires_when})" if self.retires_when else "")

    def detail(self) -> str:
        """What a reviewer needs on one line: the evidence that decides the verdict."""
        if self.carried_by:
            return f"upstream commit {self.carried_by}"
        if self.retire is not None:
            return self.retire.summary()
        wrong = [h.line_text() for h in self.hunks if h.status not in ("exact", "offset", "already")]
        if wrong:
            return "; ".join(wrong)
        moved = [f"{h.file}#{h.index} {h.text.removeprefix('applies at ')}" for h in self.hunks if h.status == "offset"]
        upstream = [f"{h.file}#{h.index}" for h in self.hunks if h.status == "already"]
        parts = []
        if upstream and self.verdict == "partly-upstream":
            parts.append("upstream carries " + ", ".join(upstream))
        if moved:
            parts.append("moved " + ", ".join(moved))
        return "; ".join(parts)


class KnobDelta(BaseModel):
    """The engine's environment-knob registry on the old and the new tree."""

    tree: str  # "pristine" or "patched"
    before: int
    after: int
    added: list[str]
    removed: list[str]
    unregistered_before: int = 0
    unregistered_after: int = 0
    new_unregistered_reads: list[str] = Field(default_factory=list)  # bare reads outside the compile-cache key
    series_registers: list[str] = Field(default_factory=list)  # patched only: knobs the series adds on the new tree
    series_unregistered_reads: list[str] = Field(default_factory=list)  # patched only: the series' own bare reads

    def describe(self, pristine: KnobDelta | None = None) -> str:
        """One line: counts, names added/removed (or 'as pristine'), what the series itself registers."""
        if pristine is not None and (self.added, self.removed) == (pristine.added, pristine.removed):
            changes = "added/removed as pristine"
        else:
            changes = (
                f"added {len(self.added)} {_plain(self.added)}; removed {len(self.removed)} {_plain(self.removed)}"
            )
        line = (
            f"{self.tree}: {self.before} → {self.after} registered; {changes}; "
            f"unregistered reads {self.unregistered_before} → {self.unregistered_after}"
        )
        if self.series_registers:
            line += f"; the series registers {_plain(self.series_registers)}"
        return line


class FlipReport(BaseModel):
    old: str  # labels, e.g. "vllm 0.32.0 (sdist vllm-0.32.0.tar.gz)"
    new: str
    new_pin: dict[str, Any]
    patches: list[FlipRow]
    knobs: list[KnobDelta] = Field(default_factory=list)
    knobs_skipped: str | None = None  # why there is no knob section (not a vLLM tree, the series did not land)
    overlay_changed: list[str] = Field(default_factory=list)  # overlay files whose upstream file changed
    requirements: list[RequirementChange] = Field(default_factory=list)  # the engine's own, old pin -> new
    requirements_skipped: str | None = None  # why they were not compared (a tree declares none)
    upstream_range: str | None = None  # the commits searched for a retired patch's carrier (old..new)

    def carrier(self, row: FlipRow) -> str:
        """'; upstream commit SHA subject', or that none in the range carries it, or nothing when none was searched."""
        if row.carried_by:
            return f"; upstream commit {row.carried_by}"
        return f"; no single upstream commit in {self.upstream_range} carries it" if self.upstream_range else ""

    def count(self, verdict: str) -> int:
        return sum(1 for p in self.patches if p.verdict == verdict)

    @property
    def blocked(self) -> list[FlipRow]:
        return [p for p in self.patches if p.verdict in BLOCKING]

    @property
    def retired(self) -> list[FlipRow]:
        return [p for p in self.patches if p.verdict == "already-upstream"]

    @property
    def needs_look(self) -> list[FlipRow]:
        return [p for p in self.patches if p.look]

    def summary(self) -> str:
        counts = [f"{self.count(v)} {VERDICT_TEXT[v]}" for v in VERDICT_TEXT if self.count(v)]
        return f"{len(self.patches)} patches: " + ", ".join(counts)


def render_markdown(report: FlipReport) -> str:
    """The flip report for the pull request that moves the pin: the table, then the evidence per patch."""
    lines = [f"# Flip {report.old} → {report.new}", "", report.summary() + ".", ""]
    if report.blocked:
        lines += [
            (
                f"**Blocked:** {len(report.blocked)} patch(es) do not apply as they are; the pin cannot move "
                "until they are re-cut or retired."
            ),
            "",
        ]
    rows = []
    for number, p in enumerate(report.patches, 1):
        look = "yes" if p.look else ""
        rows.append([number, f"`{p.name}`", p.verdict_text(), look, p.detail()])
    lines += table(["#", "patch", "verdict", "needs a look", "detail"], rows, empty="-")
    if report.retired:
        lines += ["", "## Retire (upstream carries them)", ""]
        lines += [f"- `{p.name}`: {p.description or 'no description'}{report.carrier(p)}" for p in report.retired]
    if report.needs_look:
        lines += ["", "## Needs a human look", "", "These apply, but upstream changed something they depend on:", ""]
        lines += [f"- `{p.name}`: {reason}" for p in report.needs_look for reason in p.look]
    lines += ["", "## Evidence per patch", ""]
    for number, p in enumerate(report.patches, 1):
        lines += [f"### {number}. `{p.name}`: {p.verdict_text()}", ""]
        if p.retire is not None:
            lines.append(f"{p.retire.summary()}.")
            if p.retire.differing:
                lines += ["", "Lines that differ (the patch's, then upstream's nearest):", ""]
                for mine, theirs in p.retire.differing:
                    lines.append(f"- `{mine}` / " + (f"`{theirs}`" if theirs else "no similar line upstream"))
            lines.append("")
        for h in p.hunks:
            lines.append(f"- {h.line_text()}")
            if h.was or h.now:
                lines += ["", "  ```diff", *(f"  -{t}" for t in h.was), *(f"  +{t}" for t in h.now), "  ```", ""]
        lines.append("")
    if report.overlay_changed:
        lines += ["", "## Overlay files upstream changed", ""] + [f"- {line}" for line in report.overlay_changed]
    lines += [
        "",
        "## Engine requirements",
        "",
        *requirement_lines(report, markdown=True),
        "",
        "## Environment knobs",
        "",
    ]
    if report.knobs_skipped:
        lines.append(report.knobs_skipped)
    else:
        pristine = report.knobs[0]
        rows = []
        for k in report.knobs:
            same = k is not pristine and (k.added, k.removed) == (pristine.added, pristine.removed)
            added, removed = ("as pristine", "as pristine") if same else (_names(k.added), _names(k.removed))
            rows.append(
                [k.tree, k.before, k.after, added, removed, f"{k.unregistered_before} → {k.unregistered_after}"]
            )
        lines += table(["tree", "before", "after", "added", "removed", "unregistered reads"], rows)
        patched = report.knobs[-1]
        if patched.series_registers:
            lines += ["", f"The series registers {_names(patched.series_registers)} on {report.new}."]
        reads = [
            (f"new in {report.new}", pristine.new_unregistered_reads),
            ("added by the series", patched.series_unregistered_reads),
        ]
        for label, found in reads:
            if found:
                lines += ["", f"Bare reads of unregistered knobs {label} (outside vLLM's compile-cache key):", ""]
                lines += [f"- `{read}`" for read in found]
    return "\n".join(lines) + "\n"


def requirement_lines(report: FlipReport, markdown: bool = False) -> list[str]:
    """What changed in the engine's own requirements, the changes that make a kernel cache cold first."""
    if report.requirements_skipped:
        return [f"not compared: {report.requirements_skipped}"]
    if not report.requirements:
        return [f"unchanged between {report.old} and {report.new}"]
    cold = [c for c in report.requirements if c.cache]
    head = f"{len(report.requirements)} changed" + (f", {len(cold)} with kernel caches to rebuild" if cold else "")
    shown = [f"- {markdown_text(c.describe())}" if markdown else f"  {c.describe()}" for c in report.requirements]
    return [head + ":", *shown]


def _plain(names: list[str]) -> str:
    return ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")


def _names(names: list[str]) -> str:
    if not names:
        return "-"
    shown = ", ".join(f"`{n}`" for n in names[:12])
    return shown + (f" and {len(names) - 12} more" if len(names) > 12 else "")
