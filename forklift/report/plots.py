"""The report's PNGs (matplotlib, drawn off-screen): throughput vs concurrency, TTFT, paired-delta forest.

Figures are built with matplotlib.figure.Figure directly, never pyplot, so no
GUI backend or global figure state is involved.
"""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from packaging.version import Version

from forklift.fsio import write_atomic
from forklift.report.campaign import Campaign, Row
from forklift.stats.sample import output_throughput

# `vert` is deprecated from matplotlib 3.10 on, `orientation` does not exist before it.
HORIZONTAL = {"orientation": "horizontal"} if Version(matplotlib.__version__) >= Version("3.10") else {"vert": False}
LINE_STYLES = ("-", "--", ":", "-.")
CLAIM_COLOUR = {
    "faster": "#2e7d32",
    "slower": "#c62828",
    "different": "#f9a825",
    "no practical change": "#1565c0",
    "within noise": "#757575",
    "undecided": "#ffcc80",
    "not claimable": "#ffcc80",
}
NO_ESTIMATE = "#bdbdbd"


def _hosts(campaign: Campaign) -> list[str]:
    return list(dict.fromkeys(run.hostname for run in campaign.runs))


def throughput_vs_concurrency(campaign: Campaign, path: Path) -> Path | None:
    """Output tok/s per cell against its concurrency; one line per build and setting, one panel per box."""
    hosts = _hosts(campaign)
    if not hosts:
        return None
    fig = Figure(figsize=(7, 4.2 * len(hosts)), layout="constrained")
    for i, host in enumerate(hosts):
        ax = fig.add_subplot(len(hosts), 1, i + 1)
        series: dict[tuple[str, str, str], dict[int, float]] = {}
        for run in campaign.runs:
            if run.hostname != host:
                continue
            for cell in run.body.cells:
                rate = output_throughput([run], cell.name)
                if rate is not None:
                    series.setdefault((run.build, run.setting, run.body.workload.name), {})[cell.concurrency] = rate
        for i, ((build, setting, workload), points) in enumerate(series.items()):  # line style = build
            xs = sorted(points)
            ax.plot(
                xs,
                [points[x] for x in xs],
                marker="o",
                label=f"{build} · {setting} · {workload}",
                color=f"C{i % 10}",
                linestyle=LINE_STYLES[campaign.builds.index(build) % len(LINE_STYLES)],
            )
        concurrencies = sorted({x for points in series.values() for x in points})
        if len(concurrencies) > 1:
            ax.set_xscale("log", base=2)
        ax.set_xticks(concurrencies, [str(c) for c in concurrencies])
        ax.set_xlabel("concurrency (streams)")
        ax.set_ylabel("output tok/s")
        top = max((y for points in series.values() for y in points.values()), default=1.0)
        ax.set_ylim(0, top * 1.25)  # room for the legend above the lines
        ax.set_title(f"Throughput vs concurrency on {host}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    _save(fig, path)
    return path


def ttft_distribution(campaign: Campaign, path: Path) -> Path | None:
    """TTFT of every kept request, one box per box/build/setting/cell."""
    boxes: list[tuple[str, np.ndarray]] = []
    sides = list(dict.fromkeys((run.build, run.setting) for run in campaign.runs))  # one colour each
    colours = []
    many_hosts = len(_hosts(campaign)) > 1
    for run in campaign.runs:
        for cell in run.body.cells:
            columns, rows = run.requests(cell.name), run.kept_rows(cell.name)
            ttft = columns.ttft[rows][columns.ok[rows]] * 1000 if columns is not None else np.array([])
            ttfts = ttft[~np.isnan(ttft)]
            if len(ttfts):
                where = f"{run.hostname} · " if many_hosts else ""
                boxes.append((f"{where}{run.build} · {run.setting} · {cell.name}", np.array(ttfts)))
                colours.append(f"C{sides.index((run.build, run.setting)) % 10}")
    if not boxes:
        return None
    fig = Figure(figsize=(8, 1.2 + 0.45 * len(boxes)), layout="constrained")
    ax = fig.add_subplot()
    parts = ax.boxplot(
        [values for _, values in boxes], patch_artist=True, widths=0.6, **HORIZONTAL, medianprops={"color": "black"}
    )
    for patch, colour in zip(parts["boxes"], colours, strict=True):
        patch.set_facecolor(colour)
        patch.set_alpha(0.45)
    ax.set_yticks(range(1, len(boxes) + 1), [label for label, _ in boxes], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("TTFT (ms), kept runs")
    spread = max(v.max() for _, v in boxes) / max(min(v.min() for _, v in boxes), 1e-9)
    if spread > 50:
        ax.set_xscale("log")
    ax.set_title("Time to first token")
    ax.grid(axis="x", alpha=0.3)
    _save(fig, path)
    return path


def _forest_label(row: Row, many_hosts: bool) -> str:
    return f"{row.host + ' · ' if many_hosts else ''}{row.setting} · {row.workload} · {row.cell}"


FOREST_METRICS = ("decode_tps", "e2e", "ttft", "tok_chunk")


def forest(campaign: Campaign, path: Path, most: int = 3) -> Path | None:
    """Paired change of B against A with its 95 % interval, per setting and cell; grey = within noise.

    One panel per metric that has an estimate somewhere, in FOREST_METRICS order, at most `most`.
    """
    results = [(row, row.result) for row in campaign.rows if row.result is not None]
    rows = [row for row, _ in results]
    metrics = [key for key in FOREST_METRICS if any((m := cell.metric(key)) and m.estimate for _, cell in results)][
        :most
    ]
    if not metrics:
        return None
    many_hosts = len({row.host for row in rows}) > 1
    fig = Figure(figsize=(5 * len(metrics), 1.4 + 0.45 * len(rows)), layout="constrained")
    for i, key in enumerate(metrics):
        ax = fig.add_subplot(1, len(metrics), i + 1)
        for y, (_, cell) in enumerate(results):
            result = cell.metric(key)
            if result is None or result.estimate is None:
                ax.annotate(
                    "no estimate",
                    (0, y),
                    xytext=(4, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=8,
                    color=NO_ESTIMATE,
                )
                continue
            est = result.estimate
            ax.errorbar(
                est.change * 100,
                y,
                xerr=[[(est.change - est.low) * 100], [(est.high - est.change) * 100]],
                fmt="o",
                color=CLAIM_COLOUR[result.claim],
                capsize=4,
            )
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_yticks(
            range(len(rows)),
            [_forest_label(row, many_hosts) for row in rows] if i == 0 else [""] * len(rows),
            fontsize=8,
        )
        ax.set_ylim(len(rows) - 0.5, -0.5)
        label = next((m.label for _, cell in results if (m := cell.metric(key)) is not None), key)
        ax.set_xlabel(f"{label}: B vs A, % (95% CI)")
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(
        "Change per setting (green better, red worse, blue no practical change, grey within noise)", fontsize=10
    )
    _save(fig, path)
    return path


def _save(fig: Figure, path: Path) -> None:
    """The PNG through forklift's one atomic writer: a place that refuses it is one line, a reader never sees half."""
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110)
    write_atomic(path, png.getvalue())
