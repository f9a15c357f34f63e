"""forklift.toml as a careless user or an attacker writes it: every problem is one line naming file, line or key."""

from __future__ import annotations

import pytest

from forklift.config import load_config
from forklift.errors import ConfigError
from tests.cli import forklift

PIN = '[upstream]\nsource = "path"\npath = "up"\nsha256 = "' + "0" * 64 + '"\n'


def write(tmp_path, text: str | bytes):
    path = tmp_path / "forklift.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def refused(tmp_path, text: str | bytes) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text))
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_non_utf8_byte_names_its_line(tmp_path):
    message = refused(tmp_path, PIN.encode() + b'[profiles.a]\nmodel = "caf\xe9"\n')
    assert message.endswith("forklift.toml:6: not UTF-8 (byte 0xe9); save forklift.toml as UTF-8")


@pytest.mark.parametrize("deep", ["x = " + "[" * 5000 + "]" * 5000, "x = " + "{a = " * 3000 + "1" + "}" * 3000])
def test_deep_nesting_is_one_line_not_a_recursion_error(tmp_path, deep):
    assert refused(tmp_path, PIN + deep + "\n").endswith("forklift.toml:5: arrays or tables nested more than 32 deep")


def test_brackets_inside_strings_and_comments_do_not_count(tmp_path):
    deep = "[" * 100
    write(tmp_path, PIN + f'# {deep}\n[profiles.a]\nmodel = "{deep}"\nserved_name = """\n{deep}\n"""\n')
    assert load_config(tmp_path).data.profiles["a"].model == deep


def test_a_folder_named_forklift_toml_is_one_line(tmp_path):
    (tmp_path / "forklift.toml").mkdir()
    with pytest.raises(ConfigError, match=r"forklift\.toml: is a folder, not a file"):
        load_config(tmp_path)


@pytest.mark.parametrize(
    "profiles, why",
    [
        ('[profiles.a]\nextends = "b"\n[profiles.b]\nextends = "a"\n', r"profiles: extends cycle a -> b -> a$"),
        ('[profiles.a]\nextends = "a"\n', r"profiles: extends cycle a -> a$"),
        ('[profiles.a]\nextends = "gone"\n', r"profiles\.a\.extends: unknown profile 'gone' \(profiles: a\)$"),
        ("[profiles.a]\nhealth_timeout = inf\n", r"profiles\.a\.health_timeout: inf is not a finite number$"),
        ("[profiles.a]\nargs = { seed = nan }\n", r"profiles\.a\.args\.seed: nan is not a finite number$"),
        ('[profiles.a]\nargs = { "" = 1 }\n', r"profiles\.a\.args: an empty name '' \(it would become a bare flag\)$"),
        ('[profiles.a.axes.x.y]\nenv = { " " = "v" }\n', r"profiles\.a\.axes\.x\.y\.env: an empty name"),
    ],
)
def test_check_sees_what_launch_would(tmp_path, profiles, why):
    """`check` loads the whole config first: a bad profile fails CI even when no step launches it."""
    write(tmp_path, PIN + profiles)
    done = forklift("check", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {tmp_path / 'forklift.toml'}: ")
    assert __import__("re").search(why, lines[0]), lines[0]


@pytest.mark.parametrize(
    "text, why",
    [
        ('"x\\ny" = 1\n' + PIN, r"forklift\.toml: 'x\\ny': unknown key$"),
        (PIN + '[series]\n"dir\\r" = "p"\n', r"forklift\.toml: series\.'dir\\r': unknown key$"),
        (PIN + '[profiles."a\\nb"]\n', r"forklift\.toml: profiles\.'a\\nb': a profile name must be printable"),
    ],
)
def test_a_quoted_key_with_a_line_break_is_quoted_in_one_line(tmp_path, text, why):
    """TOML's quoted keys may hold a newline (found by tests/properties): the message shows it escaped."""
    assert __import__("re").search(why, refused(tmp_path, text))
