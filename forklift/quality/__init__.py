"""Quality suites: perplexity through the server's prompt logprobs, and GSM8K exact match.

Each suite is a plain function `run_<suite>(endpoint, options) -> SuiteBody`; see
forklift.quality.session for receipts and launching, forklift.canary.SUITE_RUNNERS for the registry.
"""

from forklift.quality.endpoint import Endpoint
from forklift.quality.gsm8k import Gsm8kOptions, run_gsm8k
from forklift.quality.ppl import PplOptions, run_ppl
from forklift.quality.schema import SuiteBody

__all__ = ["Endpoint", "Gsm8kOptions", "PplOptions", "SuiteBody", "run_gsm8k", "run_ppl"]
