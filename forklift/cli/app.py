"""The typer app and the options every command shares."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Carry a patched LLM inference engine across upstream releases, and prove every step.",
    pretty_exceptions_enable=False,
)
console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


class State:
    config_path: Path = Path("forklift.toml")


state = State()


@app.callback()
def _global(
    config: Path = typer.Option(
        Path("forklift.toml"), "--config", "-c", help="forklift.toml, or the folder that holds it"
    ),
) -> None:
    state.config_path = config


def load() -> object:
    """The validated config named by --config (imported lazily to keep startup fast)."""
    from forklift.config import load_config

    return load_config(state.config_path)
