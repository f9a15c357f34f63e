"""Every command block of README.md and of every docs page runs, as written, in a temporary copy of this checkout.

- ```sh (or ```bash) blocks run as one bash script (`set -e`); lines `#   text` inside them are output the
  page shows for the command above them.
- ```console blocks are transcripts: `$ command` lines run (a refusal shown there may exit non-zero),
  the lines under each are its output.
- Shown output must appear in the real output, in order; commit hashes, digests and timestamps are
  compared by shape, not value.
- A block is preceded by `<!-- readme: network -->` (or `engine`) when it needs the index (or the real
  engine), and by `<!-- readme: not run: why -->` when a test cannot run it (the reason is printed);
  `<!-- docs: ... -->` and a bare `<!-- not run: why -->` read the same.
- `~` is a scratch home of the page's own (blocks of one page run in order and share it); caches stay the
  box's (XDG_CACHE_HOME), and git has an identity, as on a user's machine.
- Afterwards `git status` of the copy must be clean: .gitignore covers what the examples write.

`forklift` in the pages is `.venv/bin/forklift` of the copy (the README says to activate the venv).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.cli import REPO

FENCE = re.compile(
    r"^(?:<!-- (?:readme: |docs: )?(?P<mark>(?:not run|network|engine)[^>]*?) -->\n)?"
    r"```(?P<lang>sh|bash|console)\n(?P<body>.*?)^```$",
    re.M | re.S,
)
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
CACHE_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
VARIABLE = re.compile(r"\b[0-9a-f]{12,64}\b|\b\d{8}T\d{6}\b|\b\d+(?:\.\d+)? s\b")


@dataclass
class Block:
    page: str
    line: int
    lang: str
    mark: str
    steps: list[tuple[str, list[str]]] = field(default_factory=list)  # (command, shown output lines)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(text: str, page: str = "README.md") -> list[Block]:
    found = []
    for match in FENCE.finditer(text):
        lang = "sh" if match["lang"] == "bash" else match["lang"]
        block = Block(page, text.count("\n", 0, match.start("body")), lang, match["mark"] or "")
        for raw in match["body"].splitlines():
            if block.lang == "console":
                if raw.startswith("$ "):
                    block.steps.append((raw[2:], []))
                elif block.steps:
                    block.steps[-1][1].append(raw)
            elif raw.startswith("#   ") and block.steps:
                block.steps[-1][1].append(raw[4:])
            elif raw.strip() and not raw.lstrip().startswith("#"):
                block.steps.append((raw, []))
        found.append(block)
    return found


def _shape(line: str) -> str:
    return VARIABLE.sub("<v>", line.rstrip())


def assert_shown(shown: list[str], actual: str, where: str) -> None:
    """Each shown line is a line of the real output, in the order shown."""
    lines = [_shape(line) for line in actual.splitlines()]
    at = 0
    for expected in shown:
        want = _shape(expected)
        try:
            at = lines.index(want, at) + 1
        except ValueError:
            raise AssertionError(f"{where}: the page shows {expected!r}; the real output:\n{actual}") from None


README_BLOCKS = blocks((REPO / "README.md").read_text(encoding="utf-8"))
DOC_BLOCKS = [
    block for page in PAGES for block in blocks(page.read_text(encoding="utf-8"), page.relative_to(REPO).as_posix())
]


def _param(block: Block):
    marks = []
    if block.mark.startswith("not run"):
        marks.append(pytest.mark.skip(reason=f"{block.id}: {block.mark}"))
    elif block.mark in ("network", "engine"):
        marks.append(getattr(pytest.mark, block.mark))
    elif block.mark:
        raise ValueError(f"{block.id}: unknown mark {block.mark!r}")
    return pytest.param(block, id=block.id, marks=marks)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """This checkout as a user clones it: tracked and unignored files, committed in a fresh repository."""
    root = tmp_path_factory.mktemp("readme") / "forklift"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = REPO / os.fsdecode(name)
        if source.is_file():
            (root / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / os.fsdecode(name))
    git = ["git", "-c", "user.name=readme", "-c", "user.email=readme@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "the checkout"], cwd=root, check=True)
    return root


def _run(
    command: str, root: Path, bin: Path | None = None, home: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`command` in bash at `root`, `bin` first on PATH (default: the copy's .venv/bin), `home` as ~."""
    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin or root / '.venv' / 'bin'}:{env['PATH']}"  # as `source .venv/bin/activate` would
    if home is not None:
        env |= {"HOME": str(home), "XDG_CACHE_HOME": str(CACHE_HOME)}
        env |= {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER") for what, value in GIT_IDENTITY}
    return subprocess.run(
        ["bash", "-c", command], cwd=root, env=env, capture_output=True, text=True, timeout=1200, check=False
    )


GIT_IDENTITY = (("NAME", "You"), ("EMAIL", "you@example.com"))


def run_sh(
    block: Block, root: Path, bin: Path | None = None, home: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """An sh block as one bash script (`set -e`) at `root`, `forklift` from `bin`; it must exit 0."""
    done = _run("set -e\n" + "\n".join(command for command, _ in block.steps), root, bin, home)
    assert done.returncode == 0, f"{block.id}:\n{done.stdout}{done.stderr}"
    return done


def assert_steps_shown(block: Block, output: str) -> None:
    """Each command's shown lines are lines of `output`, in the order shown."""
    for command, shown in block.steps:
        assert_shown(shown, output, f"{block.id}: {command}")


def test_shown_output_must_appear_in_order_and_only_shapes_may_differ():
    actual = (
        "created the fork x: as 0123456789ab on main\nready in 38.2 s\nOK — receipt r/20261201T101010-check-aa.json"
    )
    assert_shown(["created the fork x: as bf5449fc623e on main", "ready in 1.0 s"], actual, "here")
    with pytest.raises(AssertionError, match=r"the page shows 'created the fork x"):
        assert_shown(["ready in 1.0 s", "created the fork x: as bf5449fc623e on main"], actual, "here")
    with pytest.raises(AssertionError):
        assert_shown(["created the fork y: as bf5449fc623e on main"], actual, "here")


def test_the_pages_have_command_blocks_and_each_is_run_or_says_why_not():
    assert len(README_BLOCKS) >= 2 and len(DOC_BLOCKS) >= 15
    assert all(block.steps for block in DOC_BLOCKS), [b.id for b in DOC_BLOCKS if not b.steps]


@pytest.fixture(scope="module")
def homes(tmp_path_factory) -> dict[str, Path]:
    """One scratch home per page, made on first use: the blocks of a page share it, in order."""
    return {}


@pytest.mark.parametrize("block", [_param(b) for b in DOC_BLOCKS])
def test_docs_block(block: Block, checkout: Path, homes: dict[str, Path], tmp_path_factory):
    if not (checkout / ".venv" / "bin" / "forklift").exists() and not any("scripts/setup" in c for c, _ in block.steps):
        done = _run("./scripts/setup", checkout)  # blocks after the first assume the setup it does
        assert done.returncode == 0, done.stdout + done.stderr
    home = homes.setdefault(block.page, tmp_path_factory.mktemp("home"))
    if block.lang == "sh":
        done = run_sh(block, checkout, home=home)
        assert_steps_shown(block, done.stdout + done.stderr)
    else:
        for command, shown in block.steps:
            done = _run(command, checkout, home=home)
            assert_shown(shown, done.stdout + done.stderr, f"{block.id}: {command}")
    status = subprocess.run(["git", "status", "--porcelain"], cwd=checkout, capture_output=True, text=True).stdout
    assert status == "", f"{block.id} left files .gitignore does not cover:\n{status}"


def test_generated_reference_pages_match_the_code():
    """docs/reference/config-schema.md and receipt.schema.json are rendered from the pydantic models."""
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "docs-reference"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
