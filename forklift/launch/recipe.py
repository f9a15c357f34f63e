"""What `launch --print` shows, in the format asked: lines to read, a shell command, an env file or JSON.

Every word and value is shell-quoted (a newline, `$(...)` or a backtick in a value stays inside its
word), secrets are redacted by the one rule in resolve.py, and nothing is started.
"""

from __future__ import annotations

import json

from forklift.errors import UsageError
from forklift.launch.resolve import Resolved, placement_lines, rank_lines, ray_commands, shown_argv, shown_env
from forklift.textsafe import sh_word, terminal

FORMATS = ("lines", "sh", "env", "json")


def recipe(resolved: Resolved, fmt: str = "lines") -> list[str]:
    """The printed lines: `lines` (argv and env one per line, commented), `sh` (one `env ... argv` command),
    `env` (NAME=value lines a shell can source), `json` (one object: profile, choices, argv, env)."""
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
    argv, env = shown_argv(resolved), shown_env(resolved)
    assignments = [f"{k}={sh_word(v)}" for k, v in env.items()]
    if fmt == "json":
        data = {"profile": resolved.profile, "choices": resolved.choices, "argv": argv, "env": env}
        return [json.dumps(data, indent=2, allow_nan=False)]
    if fmt == "env":
        return assignments
    if fmt == "sh":
        return [" ".join(["env", *assignments, *(sh_word(word) for word in argv)])]
    choices = " ".join(f"{k}={v}" for k, v in resolved.choices.items())
    lines = [terminal(f"# profile {resolved.profile}{' (' + choices + ')' if choices else ''}"), "# argv"]
    lines += [sh_word(word) for word in argv]
    lines += ["# env", *assignments]
    extras = (
        ("# per GPU", rank_lines(resolved)),
        ("# ray cluster (start first)", ray_commands(resolved)),
        ("# ray placement group (vLLM asks the cluster for it)", placement_lines(resolved)),
    )
    for header, extra in extras:
        if extra:
            lines += [header, *(terminal(line) for line in extra)]
    return lines
