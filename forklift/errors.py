"""Errors that stop forklift with one line naming the culprit.

Exit codes are part of the contract CI scripts rely on: 0 everything holds,
1 a check failed (or the thing checked is broken), 2 bad usage or bad config.
"""


class ForkliftError(Exception):
    """A failure whose message is one line: what went wrong and where."""

    exit_code = 1


class UsageError(ForkliftError):
    """Bad command-line usage or a bad forklift.toml: the user must fix their input."""

    exit_code = 2


class ConfigError(UsageError):
    """forklift.toml is invalid; the message names the file and the key."""
