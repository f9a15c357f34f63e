"""tinyup: a small real upstream for the fork round trip, released three times in seconds.

A python package whose releases 1.0, 1.1 and 1.2 are tags of a real git repository (v1.0, v1.1, v1.2),
published as sdists made by `git archive` on a real PEP 691 index on 127.0.0.1 (tests/source/helpers.py).
So `forklift init --pypi tinyup==1.0`, `import`, `flip`, `rebase`, `export`, `replay` and `source` run the
whole path a vLLM user runs, with every part real, on a tree of five files. Between the releases upstream
changes a line of core.py (1.1), adds extra.py (1.1) and rewrites another line of core.py (1.2).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.cli import forklift
from tests.source.helpers import serving

VERSIONS = ("1.0", "1.1", "1.2")
CORE = "tinyup/core.py"
UTIL = "tinyup/util.py"
LINES = 40  # lines of core.py; upstream changes line 3 (1.1) and line 33 (1.2), the fork edits the others
IDENTITY = {
    "GIT_AUTHOR_NAME": "Ann Maintainer",
    "GIT_AUTHOR_EMAIL": "ann@example.org",
    "GIT_COMMITTER_NAME": "Ann Maintainer",
    "GIT_COMMITTER_EMAIL": "ann@example.org",
}


def core(version: str, edits: dict[int, str] | None = None) -> str:
    """core.py of a release, with the fork's `edits` (line number -> new text) on top."""
    lines = [f"def f{n}():\n    return {n}\n" for n in range(LINES)]
    if version >= "1.1":
        lines[3] = "def f3():\n    return 'three'\n"
    if version >= "1.2":
        lines[33] = "def f33():\n    return 'thirty-three'\n"
    for number, text in (edits or {}).items():
        lines[number] = text
    return "".join(lines)


def release_files(version: str) -> dict[str, str]:
    files = {
        "PKG-INFO": f"Metadata-Version: 2.1\nName: tinyup\nVersion: {version}\n",
        "README.txt": "tinyup: a package released for the fork tests\n",
        "tinyup/__init__.py": f'__version__ = "{version}"\n',
        CORE: core(version),
        UTIL: "".join(f"U{n} = {n}\n" for n in range(20)),
    }
    if version >= "1.1":
        files["tinyup/extra.py"] = "EXTRA = True\n"
    return files


def git(repo: Path, *args: str) -> str:
    """Real git as a user runs it, with an identity (forklift's getting started says one is needed)."""
    env = {**os.environ, **IDENTITY, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def make_upstream(repo: Path) -> dict[str, bytes]:
    """The upstream repository with its three tagged releases; returns sdist file name -> bytes."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    sdists = {}
    for version in VERSIONS:
        for name in list(git(repo, "ls-files").split()):
            (repo / name).unlink()
        for name, text in release_files(version).items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"release {version}")
        git(repo, "tag", f"v{version}")
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", "--format=tar.gz", f"--prefix=tinyup-{version}/", f"v{version}"],
            check=True,
            capture_output=True,
        ).stdout
        sdists[f"tinyup-{version}.tar.gz"] = archive
    return sdists


@dataclass(frozen=True)
class TinyUp:
    """The served upstream: the environment every forklift call of a test runs with."""

    env: dict[str, str | None]

    def forklift(self, dist: Path, *args: object, env_at: str | None = None) -> subprocess.CompletedProcess[str]:
        """`forklift -c DIST ARGS`; `env_at` names the point where Ctrl-C reaches it (FORKLIFT_INTERRUPT_AT)."""
        return forklift("-c", dist, *args, env={**self.env, "FORKLIFT_INTERRUPT_AT": env_at})

    def distribution(self, folder: Path, version: str = "1.0") -> Path:
        """`forklift init --pypi tinyup==VERSION` in `folder`, as a user starts one."""
        proc = forklift("init", "--pypi", f"tinyup=={version}", "--dir", folder, env=self.env)
        assert proc.returncode == 0, proc.stderr
        return folder


@contextmanager
def served(root: Path) -> Iterator[TinyUp]:
    """tinyup's releases on a real local index, with a cache of their own under `root`."""
    sdists = make_upstream(root / "upstream")
    with serving() as index:
        for name, content in sdists.items():
            index.add("tinyup", name, content)
        yield TinyUp(env={"PIP_INDEX_URL": index.index, "FORKLIFT_CACHE": str(root / "cache")})
