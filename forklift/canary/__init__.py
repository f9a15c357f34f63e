"""Canaries: pass/fail checks a throughput table cannot see, each with its evidence in a receipt.

`SUITE_RUNNERS` names every quality and canary suite for callers that schedule them (campaign):
name -> (receipt kind, `run_<suite>(endpoint, options) -> SuiteBody`, its options class).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from forklift.canary.context import ColdPairOptions, NeedleOptions, run_cold_pair, run_needle
from forklift.canary.logscan import LogscanOptions, run_logscan
from forklift.canary.soak import SoakOptions, run_soak
from forklift.canary.structured import StructuredOptions, run_json, run_tools
from forklift.quality import Gsm8kOptions, PplOptions, run_gsm8k, run_ppl

SUITE_RUNNERS: dict[str, tuple[str, Callable[..., Any], type]] = {
    "ppl": ("quality", run_ppl, PplOptions),
    "gsm8k": ("quality", run_gsm8k, Gsm8kOptions),
    "tools": ("canary", run_tools, StructuredOptions),
    "json": ("canary", run_json, StructuredOptions),
    "needle": ("canary", run_needle, NeedleOptions),
    "cold-pair": ("canary", run_cold_pair, ColdPairOptions),
    "soak": ("canary", run_soak, SoakOptions),
    "logscan": ("canary", run_logscan, LogscanOptions),
}
CANARY_SUITES = tuple(name for name, (kind, _, _) in SUITE_RUNNERS.items() if kind == "canary")

__all__ = [
    "CANARY_SUITES",
    "SUITE_RUNNERS",
    "ColdPairOptions",
    "LogscanOptions",
    "NeedleOptions",
    "SoakOptions",
    "StructuredOptions",
    "run_cold_pair",
    "run_json",
    "run_logscan",
    "run_needle",
    "run_soak",
    "run_tools",
]
