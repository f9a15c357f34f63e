"""The git plumbing the fork stage needs: one subprocess call per question, errors naming the repo.

Every call goes through forklift.git.run_git: arguments as a list (never a shell string), the user's
git config (pagers, colour, diff drivers, rename detection, autocrlf, hooks) neutralised.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from forklift.errors import ForkliftError
from forklift.git import run_git


@dataclass(frozen=True)
class Git:
    """A git repository forklift reads (and, for import, writes commits and one branch into)."""

    repo: Path

    def run(
        self, *args: str, input: bytes | None = None, env: dict[str, str] | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[bytes]:
        return run_git(
            args,
            cwd=self.repo,
            input=input,
            env={"GIT_LITERAL_PATHSPECS": "1", **(env or {})},
            check=check,
            what=str(self.repo),
        )

    def text(self, *args: str, **kwargs: object) -> str:
        return self.run(*args, **kwargs).stdout.decode("utf-8", errors="surrogateescape")  # type: ignore[arg-type]

    def ensure_repo(self) -> None:
        if not self.repo.is_dir():
            raise ForkliftError(f"{self.repo}: no such fork repository")
        if self.run("rev-parse", "--git-dir", check=False).returncode != 0:
            raise ForkliftError(f"{self.repo}: not a git repository")

    def resolve(self, rev: str) -> str | None:
        """The full commit id `rev` names, or None when the repository has no such commit."""
        proc = self.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", check=False)
        if proc.returncode != 0:
            return None
        return proc.stdout.decode().strip()

    def commit_of(self, rev: str, what: str = "revision") -> str:
        commit = self.resolve(rev)
        if commit is None:
            raise ForkliftError(f"{self.repo}: {what} {rev!r} does not exist")
        return commit

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.run("merge-base", "--is-ancestor", older, newer, check=False).returncode == 0

    def tree_blobs(self, rev: str) -> dict[str, str]:
        """path -> blob id of every file in rev's tree (submodules and symlinks included as entries)."""
        out = self.run("ls-tree", "-r", "-z", "--full-tree", rev).stdout
        blobs = {}
        for entry in out.split(b"\0"):
            if entry:
                meta, path = entry.split(b"\t", 1)
                blobs[path.decode("utf-8", errors="surrogateescape")] = meta.split()[2].decode()
        return blobs

    def blobs(self, specs: list[str]) -> list[bytes | None]:
        """Contents of many `rev:path` objects in one `git cat-file --batch` call (None: no such object)."""
        if not specs:
            return []
        out = self.run(
            "cat-file", "--batch", input="".join(f"{s}\n" for s in specs).encode("utf-8", "surrogateescape")
        ).stdout
        contents: list[bytes | None] = []
        pos = 0
        for _ in specs:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            pos = end + 1
            if header[-1] == b"missing":
                contents.append(None)
                continue
            size = int(header[2])
            contents.append(out[pos : pos + size])
            pos += size + 1
        return contents
