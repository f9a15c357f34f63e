"""Sections a campaign adds to the report: its cells in the order they ran, and each ladder's table."""

from __future__ import annotations

from pathlib import Path

from forklift.ladder.schema import LadderBody
from forklift.mdtable import table_text
from forklift.receipts import Receipt, validated_body
from forklift.receipts.packed import written_name
from forklift.report.ladder import ladder_rows
from forklift.stats.runs import build_label
from forklift.textsafe import markdown


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def cells_table(receipts: list[tuple[Path, Receipt]]) -> str | None:
    """Every campaign cell (and warm-up boot) per box, in the order it ran: build, setting, A/A copy, boot,
    control, suites, seconds; then the engine time they took in all."""
    cells = sorted((r for _, r in receipts if r.kind in ("campaign-cell", "campaign-warmup")), key=lambda r: r.created)
    if not cells:
        return None
    many_hosts = len({r.fingerprint.machine_id for r in cells}) > 1
    rows = []
    for r in cells:
        body = r.body
        suites = ", ".join(f"{s.get('name') or s['kind']} {s['status']}" for s in body.get("suites", [])) or "–"
        rows.append(
            ([r.fingerprint.hostname] if many_hosts else [])
            + [
                f"{r.created:%H:%M:%S}",
                str(body.get("key")),
                build_label(r),
                r.setting or "–",
                str(r.aa) if r.aa else "–",
                str(body.get("boot") or ("ladder " + str(body.get("ladder")))),
                str(body.get("control") or "–"),
                suites if "suites" in body else ("warm-up, not measured" if r.kind == "campaign-warmup" else "–"),
                f"{float(body['seconds']):.0f}" if body.get("seconds") is not None else "–",
                r.status,
            ]
        )
    header = (["box"] if many_hosts else []) + [
        "ran (UTC)",
        "cell",
        "build",
        "setting",
        "A/A",
        "boot",
        "positive control",
        "suites",
        "s",
        "cell",
    ]
    total = sum(float(r.body.get("seconds") or 0.0) for r in cells)
    warmups = sum(r.kind == "campaign-warmup" for r in cells)
    line = (
        f"{plural(len(cells) - warmups, 'cell')} and {plural(warmups, 'warm-up boot')} took {total / 60:.1f} "
        "minutes of engine time "
        "(boot to stop, from their receipts; a GPU box's GPU time)."
    )
    return table_text(header, rows, escape=markdown) + "\n\n" + line


def ladder_build(path: Path, receipt: Receipt, body: LadderBody, receipts: dict[Path, Receipt]) -> str:
    """The engine build a ladder ran: its receipt's, else (a ladder that did not record it) what its boots recorded."""
    if receipt.build or receipt.engine_version:
        return build_label(receipt)
    named = {(p.parent, written_name(p)): r for p, r in receipts.items()}
    boots = [named.get((path.parent, c.boot_receipt)) for c in body.cells if c.boot_receipt]
    return next((build_label(b) for b in boots if b and (b.build or b.engine_version)), build_label(receipt))


def ladder_tables(receipts: list[tuple[Path, Receipt]]) -> list[str]:
    out = []
    by_path = dict(receipts)
    for path, receipt in receipts:
        if receipt.kind != "ladder":
            continue
        body = validated_body(path, receipt, LadderBody)
        header, rows = ladder_rows(body)
        build = ladder_build(path, receipt, body, by_path)
        title = f"### {markdown(body.key)} on {markdown(build)} / {markdown(body.setting)} ({markdown(receipt.fingerprint.hostname)})"
        burst = body.burst
        about = (
            f"Each value: a fresh boot{' with a cold compile cache' if body.cold else ''}, then {burst.requests} "
            f"requests at concurrency {burst.concurrency} ({burst.input_tokens} tokens in, {burst.output_tokens} out, "
            f"ignore_eos, unique salts). Highest pass: {body.highest_pass or 'none'}; recommended: "
            f"{body.recommended or 'none'} ({body.note}). Receipt status: {receipt.status}."
        )
        out.append("\n\n".join([title, about, table_text(header, rows, escape=markdown)]))
    return out


def extra_sections(receipts: list[tuple[Path, Receipt]]) -> list[str]:
    parts = []
    ladders = ladder_tables(receipts)
    if ladders:
        parts += ["## Memory ladders", *ladders]
    cells = cells_table(receipts)
    if cells:
        parts += ["## Campaign cells", cells]
    return parts
