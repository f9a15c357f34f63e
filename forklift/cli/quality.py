"""`forklift quality`: perplexity and GSM8K against a server (--url) or a launched profile; receipts per suite.

Also the plumbing `forklift canary` shares (where the server is, running suites, the verdict
table) and the compare hook for quality and canary receipts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from forklift.cli.app import (
    MEASURE,
    ReceiptsOption,
    app,
    config_file,
    console,
    load,
    receipts_dir,
    say,
    styled,
)
from forklift.cli.launch import ModelOption, ProfileOption, ServerLogsOption, ServerSetsOption, UrlOption
from forklift.engines import DEFAULT_ENGINE
from forklift.errors import ForkliftError, UsageError

if TYPE_CHECKING:
    from forklift.config import Config
    from forklift.quality.schema import SuiteBody
    from forklift.quality.session import Outcome, ReadySuite

# Server options every suite command takes alike.
TimeoutOption = Annotated[float, typer.Option("--timeout", help="seconds per request")]
EngineOption = Annotated[str, typer.Option("--engine", help="engine adapter (metrics and log patterns)")]


def suite_names(given: list[str], known: tuple[str, ...]) -> list[str]:
    """--suite a,b --suite c -> [a, b, c], each checked against the known suites."""
    names = [part.strip() for text in given for part in text.split(",") if part.strip()]
    if not names:
        raise UsageError(f"give --suite (one or more of {', '.join(known)})")
    for name in names:
        if name not in known:
            raise UsageError(f"--suite {name!r}: not a suite of this command (known: {', '.join(known)})")
    return names


def run_suites(
    make: Callable[[Config | None], list[ReadySuite]],
    *,
    url: str | None,
    profile: str | None,
    sets: list[str],
    logs: Path | None,
    model: str | None,
    timeout: float,
    engine: str,
    engine_roots: list[Path],
    log: Path | None,
    receipts: Path | None,
) -> list[Outcome]:
    """Build the suites (`make(config)`), run them against --url or a launched --profile, render, return outcomes."""
    from forklift.quality.endpoint import Endpoint
    from forklift.quality.session import run_launched, run_suite

    if (url is None) == (profile is None):
        raise UsageError("give one server: --url URL of a running server, or --profile NAME to launch")
    if sets and profile is None:
        raise UsageError("--set needs --profile (it changes what is launched)")
    if url is not None and not url.startswith(("http://", "https://")):
        raise UsageError(f"--url {url!r}: expected http://HOST:PORT or https://HOST:PORT")
    folder = receipts_dir(receipts)
    if profile is not None:
        config: Config = load()
        suites = make(config)
        base = Endpoint(url="", model=model or "", timeout=timeout)
        outcomes = run_launched(
            config,
            profile,
            sets,
            suites,
            folder=folder,
            logs=logs or config.root / "logs",
            endpoint=base,
        )
    else:
        from forklift.bench.session import discover_model

        assert url is not None
        suites = make(_optional_config())
        endpoint = Endpoint(
            url=url.rstrip("/"),
            model=model or discover_model(url),
            timeout=timeout,
            log_path=log,
            engine=engine,
            engine_roots=tuple(engine_roots),
        )
        outcomes = [run_suite(suite, endpoint, folder) for suite in suites]
    render(outcomes)
    return outcomes


def _optional_config() -> Config | None:
    """forklift.toml when there is one (corpora are named there); --url alone needs none."""
    return load() if config_file() is not None else None


def render(outcomes: list[Outcome]) -> None:
    from rich.table import Table

    table = Table(title="forklift suites", title_justify="left")
    for column in ("suite", "verdict", "evidence", "receipt"):
        table.add_column(column)
    for outcome in outcomes:
        body: SuiteBody = outcome.body
        verdict = styled("PASS", "green") if body.passed else styled("FAIL", "red")
        table.add_row(body.suite, verdict, _evidence(body), str(outcome.path))
    console.print(table)
    for outcome in outcomes:
        if not outcome.body.passed:
            say((f"{outcome.body.suite}: {outcome.body.failure}", "red"))


def _evidence(body: SuiteBody) -> str:
    summary = body.summary
    if body.suite == "ppl" and body.passed:
        bpb = summary.get("bits_per_byte")
        bits = f", {bpb:.4f} bits/byte" if bpb is not None else ""
        return f"perplexity {summary['perplexity']:.4f}{bits} over {summary['windows']} windows, {summary['tokens']} tokens"
    if body.suite == "gsm8k" and body.passed:
        n = summary["questions"]
        return f"strict {summary['correct_strict']}/{n}, flexible {summary['correct_flexible']}/{n}"
    shown = {
        k: v for k, v in summary.items() if (v is not None and not isinstance(v, (list, dict))) or k == "http_status"
    }
    return ", ".join(f"{k}={json.dumps(v) if isinstance(v, dict) else v}" for k, v in shown.items())


def finish(outcomes: list[Outcome], command: str) -> None:
    failed = [o for o in outcomes if not o.body.passed]
    if failed:
        raise ForkliftError(
            f"{command}: {len(failed)} of {len(outcomes)} suites failed: "
            + "; ".join(f"{o.body.suite} ({o.path})" for o in failed)
        )


QUALITY_SUITES = ("ppl", "gsm8k")


@app.command("quality", rich_help_panel=MEASURE)
def quality(
    suite: Annotated[
        list[str] | None, typer.Option("--suite", help="ppl and/or gsm8k (comma-separated or repeated)")
    ] = None,
    url: UrlOption = None,
    profile: ProfileOption = None,
    sets: ServerSetsOption = None,
    logs: ServerLogsOption = None,
    model: ModelOption = None,
    corpus: Annotated[
        list[str] | None, typer.Option("--corpus", help="ppl: a [quality.corpora.NAME] of forklift.toml (repeat)")
    ] = None,
    window_chars: Annotated[
        int | None, typer.Option("--window-chars", help="ppl: characters a window (default 1200)")
    ] = None,
    window_tokens: Annotated[
        int | None, typer.Option("--window-tokens", help="ppl: tokens a window (server /tokenize)")
    ] = None,
    windows: Annotated[int | None, typer.Option("--windows", help="ppl: score the first N windows only")] = None,
    data: Annotated[Path | None, typer.Option("--data", help="gsm8k: the test set, GSM8K JSONL")] = None,
    n: Annotated[int, typer.Option("--n", help="gsm8k: questions in the seeded subset")] = 50,
    seed: Annotated[int, typer.Option("--seed", help="gsm8k: seed of the subset and the shots")] = 0,
    shots: Annotated[int, typer.Option("--shots", help="gsm8k: k-shot prompt (0 or 5, usually)")] = 0,
    endpoint: Annotated[str, typer.Option("--endpoint", help="gsm8k: chat or completions")] = "completions",
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="gsm8k: answer length limit")] = 256,
    timeout: TimeoutOption = 600.0,
    engine: EngineOption = DEFAULT_ENGINE,
    engine_root: Annotated[
        list[Path] | None,
        typer.Option(
            "--engine-root", help="with --url: where the engine under test is installed (corpora there are refused)"
        ),
    ] = None,
    receipts: ReceiptsOption = None,
) -> None:
    """Perplexity over pinned corpora and GSM8K exact match; a receipt per suite, exit 1 if a suite failed."""
    from functools import partial

    from forklift.quality import Gsm8kOptions, PplOptions, run_gsm8k, run_ppl
    from forklift.quality.corpus import corpus_from_config
    from forklift.quality.session import ReadySuite

    names = suite_names(suite or [], QUALITY_SUITES)
    if window_chars is not None and window_tokens is not None:
        raise UsageError("give --window-chars or --window-tokens, not both")
    corpus = corpus or []
    if "ppl" in names and not corpus:
        raise UsageError("--suite ppl needs --corpus NAME (a [quality.corpora.NAME] of forklift.toml)")
    if "gsm8k" in names and data is None:
        raise UsageError("--suite gsm8k needs --data FILE (GSM8K JSONL: question, answer)")

    def make(config: Config | None) -> list[ReadySuite]:
        suites = []
        if "ppl" in names:
            if config is None:
                raise UsageError("--suite ppl: corpora are named in forklift.toml; none found (give --config)")
            unit, size = (
                ("tokens", window_tokens)
                if window_tokens is not None
                else ("chars", 1200 if window_chars is None else window_chars)
            )
            for name in corpus:
                ppl = PplOptions(corpus_from_config(config, name), unit=unit, size=size, windows=windows)  # type: ignore[arg-type]
                suites.append(ReadySuite("quality", "ppl", partial(run_ppl, options=ppl)))
        if "gsm8k" in names:
            assert data is not None
            gsm8k = Gsm8kOptions(data, n=n, seed=seed, shots=shots, endpoint=endpoint, max_tokens=max_tokens)  # type: ignore[arg-type]
            suites.append(ReadySuite("quality", "gsm8k", partial(run_gsm8k, options=gsm8k)))
        return suites

    outcomes = run_suites(
        make,
        url=url,
        profile=profile,
        sets=sets or [],
        logs=logs,
        model=model,
        timeout=timeout,
        engine=engine,
        engine_roots=engine_root or [],
        log=None,
        receipts=receipts,
    )
    finish(outcomes, "quality")
