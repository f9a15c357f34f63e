"""Git pins: a tag bound to the commit it must resolve to, checked against the remote.

A bare mirror of each remote lives in the cache. The pin holds only when the tag still
resolves to the pinned commit; otherwise the failure is named by its cause:
the commit is missing from the repository, the tag moved forward (the pinned commit is an
ancestor of what the tag names now: "moved tag"), or the pinned commit is not an ancestor
of the tag at all (history rewritten, or a wrong pin).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from forklift.errors import ForkliftError, UnreachableError
from forklift.git import git_command, last_line, run_git, temporary_index
from forklift.source.cache import Cache
from forklift.source.index import redact
from forklift.source.limits import MAX_DEPTH, PATH_MAX, Limits, UnsafeMember

_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")


def resolve_url(url: str, root: Path) -> str:
    """A local path (relative to the folder of forklift.toml) made absolute; URLs unchanged."""
    if "://" in url or _SCP_LIKE.match(url):
        return url
    path = Path(url).expanduser()
    return str(path if path.is_absolute() else (root / path).resolve())


def remote_tag_commit(url: str, tag: str) -> str:
    """The commit `tag` names at `url` now (annotated tags peeled), asked with one ls-remote."""
    ref = f"refs/tags/{tag}"
    result = run_git(["ls-remote", "--tags", "--", url, ref, ref + "^{}"], check=False)
    if result.returncode != 0:
        raise UnreachableError(f"cannot reach the git repository {redact(url)}: {_why(result.stderr)}")
    refs = {
        name: sha for sha, name in (line.split("\t", 1) for line in result.stdout.decode().splitlines() if "\t" in line)
    }
    commit = refs.get(ref + "^{}") or refs.get(ref)
    if commit is None:
        raise ForkliftError(f"tag {tag!r} not found at {redact(url)}")
    return commit


def remote_ref_commit(url: str, ref: str) -> str:
    """The commit a branch or tag `ref` names at `url` now, asked with one ls-remote: a full ``refs/...`` name
    as given, else the branch ``refs/heads/REF``, else the tag ``refs/tags/REF`` (peeled), as git resolves it."""
    names = [ref] if ref.startswith("refs/") else [f"refs/heads/{ref}", f"refs/tags/{ref}"]
    wanted = [n for name in names for n in (name, name + "^{}")]
    result = run_git(["ls-remote", "--", url, *wanted], check=False)
    if result.returncode != 0:
        raise UnreachableError(f"cannot reach the git repository {redact(url)}: {_why(result.stderr)}")
    refs = {
        name: sha for sha, name in (line.split("\t", 1) for line in result.stdout.decode().splitlines() if "\t" in line)
    }
    for name in names:
        if commit := refs.get(name + "^{}") or refs.get(name):
            return commit
    raise ForkliftError(f"ref {ref!r} (a branch or tag) not found at {redact(url)}")


def remote_tags(url: str) -> list[str]:
    """Every tag name at `url` now, asked with one ls-remote."""
    result = run_git(["ls-remote", "--tags", "--refs", "--", url], check=False)
    if result.returncode != 0:
        raise UnreachableError(f"cannot reach the git repository {redact(url)}: {_why(result.stderr)}")
    lines = result.stdout.decode("utf-8", "replace").splitlines()
    return [line.split("\t", 1)[1].removeprefix("refs/tags/") for line in lines if "\trefs/tags/" in line]


def update_mirror(url: str, cache: Cache) -> Path:
    """The cache's bare mirror of `url`, cloned or fetched (tags forced, so a moved tag shows)."""
    mirror = cache.mirror_path(url)
    with cache.lock(mirror.stem):
        if mirror.is_dir():
            fetch = ["--git-dir", str(mirror), "fetch", "--prune", "--force", "--quiet", "origin"]
            result = run_git(fetch, check=False)
        else:
            mirror.parent.mkdir(parents=True, exist_ok=True)
            with cache.scratch() as scratch:
                result = run_git(["clone", "--mirror", "--quiet", "--", url, str(scratch / "m.git")], check=False)
                if result.returncode == 0:
                    os.rename(scratch / "m.git", mirror)
    if result.returncode != 0:
        raise UnreachableError(f"cannot reach the git repository {redact(url)}: {_why(result.stderr)}")
    return mirror


def verify_pin(mirror: Path, url: str, tag: str, commit: str) -> None:
    """Fail closed unless `tag` resolves to `commit` in the freshly fetched mirror."""
    git = ["--git-dir", str(mirror)]
    if not has_commit(mirror, commit):
        raise ForkliftError(f"commit {commit} is missing from {redact(url)} (pinned for tag {tag!r})")
    found = run_git([*git, "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}"], check=False)
    if found.returncode != 0:
        raise ForkliftError(f"tag {tag!r} not found at {redact(url)}")
    now = found.stdout.decode().strip()
    if now == commit:
        return
    if run_git([*git, "merge-base", "--is-ancestor", commit, now], check=False).returncode == 0:
        raise ForkliftError(
            f"moved tag: {tag!r} at {redact(url)} now resolves to {now}, forklift.toml pins {commit} (an older commit)"
        )
    raise ForkliftError(
        f"commit {commit} is not an ancestor of tag {tag!r} at {redact(url)} (the tag resolves to {now}):"
        " history was rewritten or the pin is wrong"
    )


def has_commit(mirror: Path, commit: str) -> bool:
    return run_git(["--git-dir", str(mirror), "cat-file", "-e", f"{commit}^{{commit}}"], check=False).returncode == 0


def checkout_commit(mirror: Path, commit: str, dest: Path, label: str) -> None:
    """Write the full tree of `commit` into `dest` (read-tree + checkout-index: unlike
    `git archive`, no export-ignore attribute can leave a file out), once its listing is within bounds."""
    bound_tree(mirror, commit, label, Limits.from_env())
    with temporary_index(dest.parent) as index:
        run_git(["--git-dir", str(mirror), "read-tree", commit], env=index)
        dest.mkdir()
        run_git(["--git-dir", str(mirror), "--work-tree", str(dest), "checkout-index", "--all", "--force"], env=index)


def bound_tree(mirror: Path, commit: str, label: str, limits: Limits) -> None:
    """The tree of `commit`, listed before a file is written: at most the archive limits in entries and bytes,
    paths at most MAX_DEPTH folders deep and PATH_MAX / 2 long. Read as git lists it and stopped at the first
    bound passed: a repository of a few KiB can name the same subtree over and over (a 268 KiB one lists
    262,148 files), so neither the listing nor the checkout may be taken whole on trust."""
    argv, env = git_command(["--git-dir", str(mirror), "ls-tree", "-r", "-l", "-z", "--full-tree", commit])
    entries = total = 0
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as git:
        assert git.stdout is not None and git.stderr is not None
        try:
            pending = b""
            while chunk := git.stdout.read(1 << 16):
                *records, pending = (pending + chunk).split(b"\0")
                if len(pending) > PATH_MAX:
                    raise UnsafeMember(f"unsafe git tree {label}: a path over {PATH_MAX // 2} bytes")
                for record in records:
                    info, _, path = record.partition(b"\t")
                    size = info.split()[-1] if info else b"-"
                    entries += 1
                    total += int(size) if size.isdigit() else 0
                    if entries > limits.max_members:
                        raise UnsafeMember(f"unsafe git tree {label}: more than {limits.max_members:,} files")
                    if total > limits.max_bytes:
                        raise UnsafeMember(
                            f"unsafe git tree {label}: its files hold more than {limits.max_bytes:,} bytes"
                        )
                    if path.count(b"/") >= MAX_DEPTH:
                        raise UnsafeMember(f"unsafe git tree {label}: a path more than {MAX_DEPTH} folders deep")
                    if len(path) > PATH_MAX // 2:
                        raise UnsafeMember(f"unsafe git tree {label}: a path over {PATH_MAX // 2} bytes")
        except BaseException:
            git.kill()  # a bound passed (or Ctrl-C): the rest of the listing is never read
            raise
        stderr = git.stderr.read(1 << 16)
        returncode = git.wait()
    if returncode != 0:
        raise ForkliftError(f"git tree {label}: git ls-tree failed: {_why(stderr)}")


def _why(stderr: bytes) -> str:
    return last_line(stderr) or "no message"
