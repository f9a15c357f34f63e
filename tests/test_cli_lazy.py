"""A run imports only its command's module; `forklift --help` still lists every command."""

from __future__ import annotations

import subprocess
import sys

from typer.main import get_command_name

from forklift.cli.app import COMMAND_MODULES, MODULE_OF, app


def _registered() -> dict[str, str]:
    """Each top-level command word -> the forklift.cli module that registered it."""
    words = {}
    for info in app.registered_commands:
        words[info.name or get_command_name(info.callback.__name__)] = info.callback.__module__
    for group in app.registered_groups:
        modules = {command.callback.__module__ for command in group.typer_instance.registered_commands}
        (words[group.name],) = modules
    return words


def test_the_table_names_every_command_and_its_module() -> None:
    assert _registered() == {word: f"forklift.cli.{module}" for word, module in MODULE_OF.items()}


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\nfrom forklift.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('forklift.cli.')))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True, env={"COLUMNS": "200"}
    )


def test_one_command_imports_its_module_only() -> None:
    loaded = _run("check", "--help").stdout.splitlines()[-1]
    assert loaded == "['forklift.cli.app', 'forklift.cli.check', 'forklift.cli.checkcache']"


def test_root_help_lists_every_command() -> None:
    out = _run("--help").stdout
    assert all(f"forklift.cli.{module}" in out for module in COMMAND_MODULES)
    assert all(f" {word} " in out for word in MODULE_OF)
