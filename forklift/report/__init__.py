"""Render receipts for people: markdown tables a reviewer can paste into a PR, and PNG plots."""

from __future__ import annotations

from pathlib import Path

from forklift.fsio import make_folder, write_atomic
from forklift.report.campaign import Campaign, load_campaign


def render_report(
    folder: Path, out: Path, *, baseline: str | None = None, seed: int = 0
) -> tuple[Campaign, list[Path]]:
    """Write `out` (markdown) and its PNGs beside it, named after it; returns the campaign and every file written."""
    # local: plots pulls matplotlib (~400 ms); only a rendered report needs it
    from forklift.report import markdown, plots

    campaign = load_campaign(folder, baseline=baseline, seed=seed)
    make_folder(out.parent)
    drawn = {
        "Throughput vs concurrency": plots.throughput_vs_concurrency(
            campaign, out.with_name(f"{out.stem}-throughput.png")
        ),
        "TTFT distribution": plots.ttft_distribution(campaign, out.with_name(f"{out.stem}-ttft.png")),
        "Paired change per setting": plots.forest(campaign, out.with_name(f"{out.stem}-forest.png")),
    }
    images = {title: path for title, path in drawn.items() if path is not None}
    write_atomic(out, markdown.render(campaign, images, out.parent))
    return campaign, [out, *images.values()]


__all__ = ["Campaign", "load_campaign", "render_report"]
