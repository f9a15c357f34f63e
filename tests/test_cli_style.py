"""One CLI style: help and errors print as written, no `<bool>` metavars, --version, uncut tables off a TTY."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import forklift
from forklift.cli.app import app
from tests.cli import forklift as run
from tests.stats.synthetic import bench_receipt, records, written


def _command_paths(group, prefix=()):
    import typer.main

    command = group if prefix else typer.main.get_command(app)
    yield prefix
    for name, sub in getattr(command, "commands", {}).items():
        yield from _command_paths(sub, (*prefix, name))


def test_help_text_is_not_markup():
    done = run("launch", "--help")
    assert done.returncode == 0, done.stderr
    assert "a [profiles.NAME] of forklift.toml" in done.stdout


@pytest.mark.parametrize("path", list(_command_paths(None)), ids=lambda p: " ".join(p) or "forklift")
def test_no_bool_metavar_in_any_help(path):
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output and "Usage:" in result.output


def test_an_error_naming_a_path_with_brackets_prints_it_whole(tmp_path):
    config = tmp_path / "dist[red]x" / "forklift.toml"
    done = run("-c", config, "check")
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {config}: no such file (give --config or run in the distribution's folder)"


def test_version():
    done = run("--version")
    assert (done.returncode, done.stdout.strip()) == (0, f"forklift {forklift.__version__}")


def test_commands_are_grouped_and_completion_is_offered():
    done = run("--help")
    panels = ["Start a distribution", "Series: the CI gate", "Fork round-trip", "Run the engine", "Measure"]
    positions = [done.stdout.index(panel) for panel in panels]
    assert positions == sorted(positions)  # pipeline order
    assert "--install-completion" in done.stdout


def test_tables_are_not_cut_when_stdout_is_not_a_terminal(tmp_path):
    """A CI log shows the whole cell name; an explicit --width 80 folds it (so the check can fail)."""
    cell = "c" + "-very-long-cell-name" * 6  # 121 characters
    a = written(bench_receipt({cell: records(prompts=4, seed=1)}), tmp_path / "a")
    b = written(bench_receipt({cell: records(prompts=4, seed=2)}), tmp_path / "b")

    def table_rows(out: str) -> list[str]:
        return [line for line in out.splitlines() if line.startswith("│")]

    wide = run("compare", a, b)
    assert wide.returncode == 0, wide.stderr
    assert any(cell in row for row in table_rows(wide.stdout))
    narrow = run("--width", "80", "compare", a, b)
    assert narrow.returncode == 0, narrow.stderr
    assert table_rows(narrow.stdout) and not any(cell in row for row in table_rows(narrow.stdout))


def test_every_top_level_command_sits_in_a_help_panel():
    import typer.main

    group = typer.main.get_command(app)
    loose = sorted(name for name, command in group.commands.items() if not getattr(command, "rich_help_panel", None))
    assert loose == []
