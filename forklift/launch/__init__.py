"""launch: profiles -> exact argv + env, supervised boot, boot facts from the log, clean stop."""

__all__ = [
    "boot",
    "bootlog",
    "engine_checks",
    "gpus",
    "pidfiles",
    "plan",
    "preflight",
    "resolve",
    "schema",
    "session",
    "supervise",
]  # the public modules; import what you need from them
