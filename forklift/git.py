"""The one way forklift runs git: argv only, never a shell, and with the user's configuration neutralised.

What a pristine tree or a diff looks like must not depend on the machine: ``~/.gitconfig`` and
``/etc/gitconfig`` are not read (no ``core.autocrlf`` turning a checkout into CRLF, no aliases, no
pager, no diff drivers, no template folder), hooks never run, and no prompt waits for a password.
A repository's own ``.git/config`` is still read (a remote's URL lives there), so the settings that
change bytes are also forced on the command line, where they win over any file.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from forklift.errors import ForkliftError

# Forced on every call; -c wins over every config file, including the repository's own.
NEUTRAL_CONFIG = (
    "core.autocrlf=false",
    "core.eol=lf",
    "core.safecrlf=false",
    "core.hooksPath=/dev/null",
    "core.attributesFile=/dev/null",
    "core.quotepath=false",
    "core.pager=cat",
    "core.fsmonitor=false",
    "color.ui=false",
    "diff.noprefix=false",
    "diff.mnemonicprefix=false",
    "init.templateDir=",
)

NEUTRAL_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "GIT_TEMPLATE_DIR": "",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "LC_ALL": "C",
}


def git_command(
    args: list[str] | tuple[str, ...], *, cwd: Path | str | None = None, env: dict[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of ``git ARGS`` with the user's configuration neutralised (for run_git, and for
    a caller that must read git's output as it comes)."""
    argv = ["git"]
    for setting in NEUTRAL_CONFIG:
        argv += ["-c", setting]
    if cwd is not None:
        argv += ["-C", str(cwd)]
    argv += list(args)
    # Inherited GIT_DIR and friends (set when forklift runs inside a git hook) would redirect every call.
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in ("GIT_SSH_COMMAND", "GIT_SSH")}
    return argv, {**inherited, **NEUTRAL_ENV, **(env or {})}


def run_git(
    args: list[str] | tuple[str, ...],
    *,
    cwd: Path | str | None = None,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
    what: str = "",
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git ARGS`` (bytes in, bytes out); with `check`, a non-zero exit is one ForkliftError line.

    `what` prefixes the error (a repository path) so the line names the culprit.
    """
    argv, full_env = git_command(args, cwd=cwd, env=env)
    try:
        proc = subprocess.run(argv, check=False, input=input, capture_output=True, env=full_env)
    except FileNotFoundError:
        raise ForkliftError("git is not installed or not on PATH (forklift needs it for git pins and forks)") from None
    if check and proc.returncode != 0:
        prefix = f"{what}: " if what else ""
        shown = shlex.join(["git", *args[:1]])
        raise ForkliftError(f"{prefix}{shown} failed: {last_line(proc.stderr) or f'exit {proc.returncode}'}")
    return proc


def last_line(stderr: bytes | str) -> str:
    """The line of git's stderr that says why: the first fatal/error line, else the first line."""
    text = stderr.decode("utf-8", errors="replace") if isinstance(stderr, bytes) else stderr
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (fatal or lines or [""])[0]


@contextmanager
def temporary_index(folder: Path | str | None = None) -> Iterator[dict[str, str]]:
    """The env for a throwaway index file (``GIT_INDEX_FILE``), removed afterwards: the repository's own
    index (and a user's staged work) is never touched."""
    scratch = tempfile.mkdtemp(prefix="forklift-index-", dir=folder)
    try:
        yield {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
    finally:
        for name in os.listdir(scratch):
            os.unlink(os.path.join(scratch, name))
        os.rmdir(scratch)
