"""Read `vllm bench serve --save-result` JSON into a bench body, so old result archives compare.

Field names are those vLLM 0.32.0 writes (vllm/benchmarks/serve.py). With --save-detailed
the file holds per-request lists (start_times, ttfts, itls, latencies, output_lens, ...)
and every request becomes a RequestRecord; without it only vLLM's own summary survives,
under aggregate["vllm_reported"]. An --append-result file (one JSON object per line)
becomes one cell per line.

Two differences a reader must know: vLLM's chat TTFT is the first chunk with a `content`
key (the role-only chunk counts), and its ITL is per chunk, not per token; imported
records keep vLLM's timings, and spread each chunk's tokens evenly (chunk_tokens_from="spread").
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from forklift.bench.aggregate import aggregate
from forklift.bench.metrics import derive
from forklift.bench.schema import BenchBody, Cell
from forklift.client.records import RequestRecord
from forklift.errors import ForkliftError, validation_line
from forklift.fsio import loads_json, read_bounded, utf8_text
from forklift.workload.items import WorkloadIdentity

REQUIRED = ("duration", "completed", "model_id")
DETAIL = ("start_times", "ttfts", "itls", "latencies", "input_lens", "output_lens", "errors")
SPEC_FIELDS = {
    "spec_decode_num_drafts": "spec_drafts",
    "spec_decode_draft_tokens": "spec_draft_tokens",
    "spec_decode_accepted_tokens": "spec_accepted_tokens",
}


def read_results(path: Path) -> list[dict[str, Any]]:
    text = utf8_text(read_bounded(path, "vllm bench result"), path, "the result file")
    results = []
    try:
        results = [loads_json(text, str(path), "vllm bench result", foreign_nan=True)]
    except ForkliftError:
        for lineno, line in enumerate(text.splitlines(), 1):  # --append-result: one object per line
            if line.strip():
                results.append(loads_json(line, f"{path}:{lineno}", "result line", foreign_nan=True))
    for index, result in enumerate(results):
        missing = [key for key in REQUIRED if not isinstance(result, dict) or key not in result]
        if missing:
            raise ForkliftError(
                f"{path}: result {index + 1} is not a `vllm bench serve --save-result` file (missing {', '.join(missing)})"
            )
    if not results:
        raise ForkliftError(f"{path}: empty result file")
    return results


def error_kind(text: str) -> str:
    lowered = text.lower()
    if "timeout" in lowered:
        return "timeout"
    if "connect" in lowered:
        return "connect"
    return "protocol"


def spread(tokens: int, chunks: int) -> list[int]:
    base, extra = divmod(tokens, chunks)
    return [base + (1 if i < extra else 0) for i in range(chunks)]


def records_of(result: dict[str, Any]) -> list[RequestRecord]:
    """Per-request records from a --save-detailed result; times relative to the first send."""
    columns = [result[key] for key in DETAIL]
    if len({len(c) for c in columns}) != 1:
        raise ForkliftError("per-request lists of unequal length in the result file")
    texts = result.get("generated_texts") or [None] * len(columns[0])
    zero = min(result["start_times"], default=0.0)
    records = []
    for i, (start, ttft, itl, latency, n_in, n_out, error) in enumerate(zip(*columns, strict=True)):
        record = RequestRecord(prompt_id=f"vllm-{i:05d}", send=start - zero)
        if error:
            record.error_kind = error_kind(error)  # type: ignore[assignment]
            record.error = error.strip().splitlines()[-1][:300]
            records.append(record)
            continue
        record.first_token = record.send + ttft
        record.end = record.send + latency
        times = [record.first_token]
        for gap in itl:
            times.append(times[-1] + gap)
        counts = [1, *spread(max(n_out - 1, 0), len(itl))] if itl else [n_out]
        record.chunks = list(zip(times, counts, strict=True))
        record.prompt_tokens, record.completion_tokens, record.tokens_from = n_in, n_out, "usage"
        record.chunk_tokens_from = "spread"
        if texts[i] is not None:
            record.output_sha256 = hashlib.sha256(texts[i].encode()).hexdigest()
        records.append(record)
    return records


def cell_of(result: dict[str, Any]) -> Cell:
    concurrency = result.get("max_concurrency") or result.get("num_prompts") or 1
    rate = result.get("request_rate")
    detailed = all(key in result for key in DETAIL)
    records = records_of(result) if detailed else []
    cell = Cell(
        name=f"c{concurrency}" if result.get("max_concurrency") else f"rate-{rate}",
        concurrency=int(concurrency),
        request_rate=None if rate in (None, "inf") else float(rate),
        kept_runs=[0],
        duration_s=result["duration"],
        requests=records,
        complete=not result.get("failed"),
    )
    reported = {k: v for k, v in result.items() if not isinstance(v, list) and k not in REQUIRED}
    cell.aggregate = aggregate(records, concurrency=cell.concurrency, duration_s=cell.duration_s) if detailed else {}
    cell.aggregate["vllm_reported"] = reported
    raw = {role: float(result[key]) for key, role in SPEC_FIELDS.items() if key in result}
    cell.metrics_delta = derive(raw) if raw else {}
    return cell


def workload_of(results: list[dict[str, Any]], path: Path) -> WorkloadIdentity:
    """An imported workload is known only by its shape: backend, prompt count and input lengths."""
    first = results[0]
    shape = {
        "backend": first.get("backend"),
        "num_prompts": first.get("num_prompts"),
        "input_lens": first.get("input_lens"),
        "total_input_tokens": first.get("total_input_tokens"),
    }
    digest = hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()
    return WorkloadIdentity(
        name=first.get("label") or f"vllm-bench-{path.stem}",
        hash=digest,
        endpoint="chat" if "chat" in str(first.get("backend")) else "completions",
        prompts=first.get("num_prompts"),
        salted=False,
    )


def import_vllm_result(path: Path) -> BenchBody:
    results = read_results(path)
    first = results[0]
    try:
        return BenchBody(
            url=str(first.get("base_url") or "(imported)"),
            model=str(first["model_id"]),
            mode="import",
            workload=workload_of(results, path),
            cells=[cell_of(result) for result in results],
            source=str(path),
            client={"tool": "vllm bench serve", "date": first.get("date"), "backend": first.get("backend")},
        )
    except (ValidationError, TypeError, ValueError, KeyError) as exc:  # a value of the wrong type or shape
        raise ForkliftError(f"{path}: not a usable `vllm bench serve` result: {_why(exc)}") from None


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):  # several lines; the first error names the field
        return validation_line(exc)
    return f"{type(exc).__name__}: {exc}"
