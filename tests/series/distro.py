"""A small real distribution on disk: a local folder pinned by its listing digest, a series, forklift.toml.

No network: the pin is a `path` pin, which the CLI verifies and copies like any other.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from forklift.source.hashing import directory_digest

MOD = "".join(f"v{i} = {i}\n" for i in range(1, 31))  # v1 = 1 ... v30 = 30


def edit(path: str, line: int, new: str, text: str = MOD) -> str:
    """A -p1 unified diff replacing line `line` (1-based) of `text` with `new`, three lines of context."""
    lines = text.splitlines()
    i = line - 1
    before, after = lines[max(i - 3, 0) : i], lines[i + 1 : i + 4]
    body = "".join(f" {x}\n" for x in before) + f"-{lines[i]}\n+{new}\n" + "".join(f" {x}\n" for x in after)
    n = len(before) + 1 + len(after)
    start = i - len(before) + 1
    return f"--- a/{path}\n+++ b/{path}\n@@ -{start},{n} +{start},{n} @@\n{body}"


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)


def distribution(
    tmp_path: Path,
    tree: dict[str, str | bytes],
    patches: dict[str, str | bytes],
    series: str | None = None,
    extra_toml: str = "",
    series_keys: str = "",
) -> Path:
    """The distribution folder: upstream/ (pinned by path), patches/ with `series`, forklift.toml."""
    dist = tmp_path / "dist"
    upstream = tmp_path / "upstream"
    write_files(upstream, tree)
    write_files(dist / "patches", patches)
    (dist / "patches" / "series").write_text(series if series is not None else "".join(f"{n}\n" for n in patches))
    (dist / "forklift.toml").write_text(
        f'[upstream]\nsource = "path"\npath = "{upstream}"\nsha256 = "{directory_digest(upstream)}"\n\n'
        f'[series]\ndir = "patches"\npatches_md = ""\n{series_keys}\n{extra_toml}'
    )
    return dist


def forklift(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "250"}  # a table row on one line
    return subprocess.run(
        [sys.executable, "-m", "forklift", *args], capture_output=True, text=True, cwd=cwd, env=env, check=False
    )


def tree_bytes(root: Path, ignore: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every regular file below `root` by relative path, but for the top-level entries named in `ignore`."""
    out = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if rel.parts[0] in ignore or path.is_dir():
            continue
        out[rel.as_posix()] = path.read_bytes()
    return out


def commit_all(repo: Path, files: dict[str, str | bytes], message: str, tag: str | None = None) -> str:
    """Write `files` into the git repository at `repo` (made on first use), commit everything, tag; the commit."""
    if not (repo / ".git").exists():
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    write_files(repo, files)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", message], check=True)
    if tag:
        subprocess.run([*git, "tag", tag], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
