"""Run the peers forklift's engine is held against: `git apply` and GNU `patch`, on real files."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PeerResult:
    applies: bool
    offsets: tuple[int, ...] = ()  # per hunk that landed away from its line (GNU patch's report)
    fuzz: bool = False
    output: str = ""


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def gnu_patch(root: Path, patch_text: str, fuzz: int = 0, reverse: bool = False) -> PeerResult:
    argv = ["patch", "-p1", "--dry-run", "--batch", f"--fuzz={fuzz}", "--forward" if not reverse else "--reverse"]
    proc = subprocess.run(argv, cwd=root, input=patch_text, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    offsets = tuple(int(m) for m in re.findall(r"\(offset (-?\d+) lines?\)", out))
    return PeerResult(proc.returncode == 0, offsets, "with fuzz" in out, out)


def git_apply(root: Path, patch_text: str, reverse: bool = False) -> PeerResult:
    argv = ["git", "apply", "--check", "-v", "--unidiff-zero"] + (["-R"] if reverse else [])
    proc = subprocess.run(argv, cwd=root, input=patch_text, capture_output=True, text=True)
    return PeerResult(proc.returncode == 0, output=proc.stdout + proc.stderr)


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
