"""Run the peers forklift's engine is held against: `git apply` and GNU `patch`, on real files."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from forklift.series.apply import Applier, Link

_OFFSET = re.compile(r"Hunk #(\d+) succeeded at \d+ \(offset (-?\d+) lines?\)")


@dataclass(frozen=True)
class PeerResult:
    applies: bool
    offsets: tuple[int, ...] = ()  # per hunk that landed away from its line, as the tool reports it
    fuzz: bool = False
    output: str = ""


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    """Files (a `Link` value becomes a real symbolic link to its target)."""
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Link):
            os.symlink(bytes(content).decode(), target)
        else:
            target.write_bytes(content)


def read_tree(root: Path) -> dict[str, bytes]:
    """Every file and symlink under `root` (symlinks as `Link`), rejects and backups left out."""
    out: dict[str, bytes] = {}
    for place in sorted(root.rglob("*")):
        rel = place.relative_to(root).as_posix()
        if rel.endswith((".rej", ".orig")) or rel.startswith(".git/"):
            continue
        if place.is_symlink():
            out[rel] = Link(os.readlink(place).encode())
        elif place.is_file():
            out[rel] = place.read_bytes()
    return out


def gnu_patch(root: Path, patch_text: str, fuzz: int = 0, reverse: bool = False) -> PeerResult:
    argv = ["patch", "-p1", "--dry-run", "--batch", f"--fuzz={fuzz}", "--forward" if not reverse else "--reverse"]
    proc = subprocess.run(argv, check=False, cwd=root, input=patch_text, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    offsets = tuple(int(m.group(2)) for m in _OFFSET.finditer(out))
    return PeerResult(proc.returncode == 0, offsets, "with fuzz" in out, out)


def git_apply(root: Path, patch_text: str, reverse: bool = False) -> PeerResult:
    """`git apply --check -v` with git's default options (no --unidiff-zero), as a distribution runs it."""
    argv = ["git", "apply", "--check", "-v"] + (["-R"] if reverse else [])
    proc = subprocess.run(argv, check=False, cwd=root, input=patch_text, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    return PeerResult(proc.returncode == 0, tuple(int(m.group(2)) for m in _OFFSET.finditer(out)), output=out)


def gnu_patch_apply(root: Path, patch_text: str, path: str) -> bytes:
    """Really apply with patch --fuzz 0 in `root` and return the patched file's bytes."""
    subprocess.run(
        ["patch", "-p1", "--batch", "--forward", "--fuzz=0", "--no-backup-if-mismatch"],
        cwd=root,
        input=patch_text,
        capture_output=True,
        text=True,
        check=True,
    )
    return (root / path).read_bytes()


def run_tool(argv: list[str], cwd: Path, env: dict[str, str], stdin: bytes = b"") -> tuple[bool, str]:
    """A real tool's (exit status 0, stdout and stderr), in the C locale its messages are parsed in."""
    proc = subprocess.run(argv, check=False, cwd=cwd, input=stdin, capture_output=True, env={**env, "LC_ALL": "C"})
    return proc.returncode == 0, (proc.stdout + proc.stderr).decode("utf-8", "surrogateescape")


def offsets(output: str) -> list[tuple[int, int]]:
    """(hunk number, offset) of each 'Hunk #N succeeded at L (offset K lines).' GNU and git print."""
    return [(int(m.group(1)), int(m.group(2))) for m in _OFFSET.finditer(output)]


def really_apply(root: Path, applier: Applier, patch: bytes) -> tuple[bool, dict[str, bytes], str]:
    """Apply for real as a distribution does (quilt's `patch -p1 -f --fuzz=0`, or `git apply -v`):
    (exit status 0, the tree afterwards, the tool's output)."""
    if applier == "gnu-patch":
        argv = ["patch", "-p1", "-f", "--fuzz=0", "--no-backup-if-mismatch"]
    else:
        argv = ["git", "apply", "-v"]
    ok, output = run_tool(argv, root, {**os.environ, "GIT_CEILING_DIRECTORIES": str(root.parent)}, patch)
    return ok, read_tree(root), output
