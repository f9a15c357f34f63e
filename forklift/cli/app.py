"""The typer app, its console, and the options and output helpers every command shares.

One style for every command: options are `Annotated`, help and printed values are never parsed as rich
markup (styles are applied as `Text` parts), JSON goes out one way, and tables are not cut when stdout
is not a terminal (a CI log shows full patch names and intervals).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.segment import Segment
from rich.text import Text
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandFunctionType

from forklift.textsafe import terminal

if TYPE_CHECKING:
    from forklift.config import Config

# Help panels, in pipeline order: `forklift --help` lists the commands by stage.
START = "Start a distribution"
SERIES = "Series: the CI gate"
FORK = "Fork round-trip"
FLIP = "Move the pin"
ENGINE = "Run the engine"
MEASURE = "Measure and compare"

# Width when stdout is not a terminal and COLUMNS is unset: wide enough that no table cell is cut.
UNCUT_WIDTH = 4000


def _plain_help(command: Any) -> None:
    """Help is plain text: `[profiles.NAME]` and a path with `[red]` in it print as written.

    typer renders help through rich markup; escaping once here keeps every help string literal.
    """
    if command.help:
        command.help = escape(command.help)
    if command.short_help:
        command.short_help = escape(command.short_help)
    for param in command.params:  # typer's own (vendored) click types: duck-typed
        if getattr(param, "help", None):
            param.help = escape(param.help)


def _no_flag_metavars(params: list[Any]) -> list[Any]:
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""  # a flag takes no value: no `<bool>` in help
    return params


class Command(TyperCommand):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain_help(self)

    def get_params(self, ctx: Any) -> list[Any]:
        return _no_flag_metavars(super().get_params(ctx))


class Group(TyperGroup):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain_help(self)

    def get_params(self, ctx: Any) -> list[Any]:
        return _no_flag_metavars(super().get_params(ctx))


class App(typer.Typer):
    """A typer app whose commands and groups use the plain-help classes above."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", Group)
        kwargs.setdefault("no_args_is_help", True)
        super().__init__(rich_markup_mode="rich", pretty_exceptions_enable=False, **kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Callable[[CommandFunctionType], CommandFunctionType]:
        kwargs.setdefault("cls", Command)
        return super().command(*args, **kwargs)


# Each command module registers its commands on `app` when imported, in pipeline order: within a help
# panel, commands are listed in this order. The words each module registers let `forklift check` import
# only forklift.cli.check (tests/test_cli_lazy.py holds this table to what the modules register).
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "source": ("init", "fetch", "source", "cache"),
    "check": ("check", "patches-md"),
    "lint": ("lint",),
    "manifest": ("manifest",),
    "tree": ("tree",),
    "pick": ("pick",),
    "rangediff": ("range-diff",),
    "fork": ("export", "import", "rebase", "replay"),
    "flip": ("flip",),
    "watch": ("watch",),
    "launch": ("launch", "stop"),
    "knobs": ("knobs",),
    "installed": ("apply", "verify"),
    "upstream_tests": ("upstream-tests",),
    "ship": ("wheel", "image"),
    "bench": ("bench",),
    "quality": ("quality",),
    "canary": ("canary",),
    "compare": ("compare",),
    "report": ("report", "pack"),
    "ladder": ("ladder",),
    "campaign": ("campaign",),
}
MODULE_OF = {word: module for module, words in COMMAND_MODULES.items() for word in words}


class Root(App):
    """The top-level app: its command modules are imported the first time its commands are read.

    All of them, in pipeline order, unless `only` names one command word: then only that word's module,
    so a run of one command does not pay for importing the other sixteen. `forklift --help` reads all.
    """

    def __init__(self, **kwargs: Any) -> None:
        self.only: str | None = None
        self._loaded = False
        super().__init__(**kwargs)

    @property
    def registered_commands(self) -> list[Any]:
        self._load()
        return self._commands

    @registered_commands.setter
    def registered_commands(self, value: list[Any]) -> None:
        self._commands = value

    @property
    def registered_groups(self) -> list[Any]:
        self._load()
        return self._groups

    @registered_groups.setter
    def registered_groups(self, value: list[Any]) -> None:
        self._groups = value

    def _load(self) -> None:
        if self._loaded or not hasattr(self, "_groups"):  # still in Typer.__init__
            return
        self._loaded = True  # first: the modules' own registrations read these lists
        module = MODULE_OF.get(self.only or "")
        for name in (module,) if module else COMMAND_MODULES:
            importlib.import_module(f"forklift.cli.{name}")


app = Root(
    add_completion=True,
    help="Carry a patched LLM inference engine across upstream releases, and prove every step.",
)


class SafeConsole(Console):
    """A console whose text cannot drive the terminal: a control character in a printed string (ESC[2J, an
    OSC 8 link, BEL, a backspace from a receipt's hostname) is shown as a visible escape. Styles are
    rendered by rich after this, so forklift's own colours stay."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            Segment(terminal(s.text, keep="\n"), s.style, s.control) if not s.control else s for s in buffer
        )


console = SafeConsole(highlight=False, markup=False)
err_console = SafeConsole(stderr=True, highlight=False, markup=False)


class State:
    config_path: Path = Path("forklift.toml")


state = State()


def _version(value: bool) -> None:
    if value:
        import forklift

        typer.echo(f"forklift {forklift.__version__}")
        raise typer.Exit()


@app.callback()
def _global(
    config: Annotated[Path, typer.Option("--config", "-c", help="forklift.toml, or the folder that holds it")] = Path(
        "forklift.toml"
    ),
    width: Annotated[
        int | None,
        typer.Option(
            "--width", min=40, help="output width in columns (default: the terminal's; uncut when not a terminal)"
        ),
    ] = None,
    _show_version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    state.config_path = config
    for out in (console, err_console):
        if width is not None:
            out.width = width
        elif not out.is_terminal and "COLUMNS" not in os.environ:
            out.width = UNCUT_WIDTH


def load() -> Config:
    """The validated config named by --config (imported lazily to keep startup fast)."""
    from forklift.config import load_config

    return load_config(state.config_path)


def config_file() -> Path | None:
    """forklift.toml named by --config when it exists (commands like bench run without one)."""
    path = state.config_path / "forklift.toml" if state.config_path.is_dir() else state.config_path
    return path if path.exists() else None


# The one --receipts option; receipts_dir() applies the one rule for its default.
ReceiptsOption = Annotated[
    Path | None,
    typer.Option("--receipts", help="receipt folder (default: receipts/ beside forklift.toml, else ./receipts)"),
]
JsonOption = Annotated[bool, typer.Option("--json", help="print JSON instead of tables")]


def receipts_dir(given: Path | None) -> Path:
    from forklift.receipts import receipts_folder

    return receipts_folder(given, config_file())


def say(*parts: str | tuple[str, str], err: bool = False) -> None:
    """Print one line; a (text, style) part is styled, nothing is parsed as markup. Long lines stay whole."""
    (err_console if err else console).print(Text.assemble(*parts), soft_wrap=True)


def warn(message: str) -> None:
    say(("warning:", "yellow"), " ", message, err=True)


def print_json(data: Any) -> None:
    """The one way JSON is printed: indented, plain (no colour, no wrapping), on stdout."""
    from forklift.fsio import dumps_json

    sys.stdout.write(dumps_json(data) + "\n")
    sys.stdout.flush()


def styled(text: str, style: str) -> Text:
    """A table cell or line part in a style (never parsed as markup)."""
    return Text(text, style=style)
