"""Shared fixtures: each stage's session fixtures live in tests/fixtures/ and are plugged in here."""

import signal

pytest_plugins = [
    "tests.fixtures.pypi",
    "tests.fixtures.sse",
    "tests.fixtures.engine",
    "tests.fixtures.ray_cluster",
    "tests.fixtures.upstream_git",
    "tests.fork.fixtures",
]

# A suite started in the background by a non-interactive shell (`./scripts/test &`, nohup) inherits SIGINT
# ignored, and every child it starts would too: the Ctrl-C tests' SIGINT would be dropped and the command run on
# (seen: four Ctrl-C tests failed that way under scripts/test-under-load). A handler, unlike an ignore, is reset to
# the default when a child execs, so the commands under test get Ctrl-C as a user's terminal sends it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
