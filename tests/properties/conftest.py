"""Hypothesis profiles for the property tests: "ci" (the default, a few seconds) and "long" (scripts/fuzz).

The long profile runs FORKLIFT_FUZZ_EXAMPLES cases per test (default 10,000; with the tests here that is over
100,000 cases in all).
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "long",
    max_examples=int(os.environ.get("FORKLIFT_FUZZ_EXAMPLES", "10000")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
