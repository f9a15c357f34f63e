"""Shared fixtures: each stage's session fixtures live in tests/fixtures/ and are plugged in here."""

pytest_plugins = [
    "tests.fixtures.pypi",
    "tests.fixtures.sse",
    "tests.fixtures.engine",
    "tests.fork.fixtures",
]
