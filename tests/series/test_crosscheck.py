"""forklift's engine against git apply and GNU patch (fuzz 0) on the same seeded random inputs.

Each case builds a real file, a real unified diff of a random edit, and a
perturbed target (unchanged, shifted, context edited, already patched, or
drifted at the file's start or end, where the two tools' rules differ), then
asks the tools. Under each applier forklift must agree with that tool on
whether the patch applies, where (offsets), and on the resulting bytes.
"""

from __future__ import annotations

import difflib
import random

import pytest

from forklift.series.apply import apply_patch
from forklift.series.model import parse_patch
from tests.series.peers import git_apply, gnu_patch, gnu_patch_apply, really_apply, write_tree

COMMON = ["", "    return None", "}", "    pass", "# ----"]


def _base(rng: random.Random, n: int) -> list[str]:
    return [
        rng.choice(COMMON) + "\n" if rng.random() < 0.15 else f"line {i} {rng.randrange(10**6)}\n" for i in range(n)
    ]


def _edit(rng: random.Random, lines: list[str], edge: bool = False) -> list[str]:
    out = list(lines)
    for _ in range(rng.randint(1, 4)):
        i = rng.choice([0, 1, 2, 3, len(out) - 3, len(out) - 2, len(out) - 1]) if edge else rng.randrange(len(out))
        kind = rng.choice(["replace", "insert", "delete"])
        if kind == "replace":
            out[i] = f"changed {rng.randrange(10**6)}\n"
        elif kind == "insert":
            out.insert(i, f"added {rng.randrange(10**6)}\n")
        elif len(out) > 5:
            del out[i]
    return out


def _diff(old: list[str], new: list[str]) -> str:
    body = "".join(difflib.unified_diff(old, new, "a/f.txt", "b/f.txt", n=3))
    return "diff --git a/f.txt b/f.txt\n" + body


def _target(rng: random.Random, variant: str, old: list[str], new: list[str]) -> list[str]:
    lines = list(old)
    if variant == "shifted":
        for _ in range(rng.randint(1, 5)):
            lines.insert(rng.randrange(len(lines) + 1), f"upstream {rng.randrange(10**6)}\n")
    elif variant == "context-edited":
        i = rng.randrange(len(lines))
        lines[i] = f"upstream rewrote {rng.randrange(10**6)}\n"
    elif variant == "applied":
        lines = list(new)
    elif variant == "head-drift":
        lines[:0] = [f"upstream head {rng.randrange(10**6)}\n" for _ in range(rng.randint(1, 3))]
    elif variant == "tail-drift":
        lines += [f"upstream tail {rng.randrange(10**6)}\n" for _ in range(rng.randint(1, 3))]
    return lines


def _cases():
    rng = random.Random(20261130)
    variants = ["unchanged", "shifted", "context-edited", "applied", "head-drift", "tail-drift"]
    for number in range(180):
        variant = variants[number % len(variants)]
        old = _base(rng, rng.randint(20, 120))
        new = _edit(rng, old, edge=variant.endswith("drift"))
        if new == old:
            continue
        yield pytest.param(number, variant, old, new, _target(rng, variant, old, new), id=f"{number}-{variant}")


@pytest.mark.parametrize("number,variant,old,new,target", list(_cases()))
def test_engine_agrees_with_git_and_gnu_patch(tmp_path, number, variant, old, new, target):
    text = _diff(old, new)
    content = "".join(target).encode()
    write_tree(tmp_path, {"f.txt": content})
    patch = parse_patch("case.patch", text)
    ours = apply_patch(lambda p: content if p == "f.txt" else None, patch, "gnu-patch")
    theirs = apply_patch(lambda p: content if p == "f.txt" else None, patch, "git-apply")

    forward = gnu_patch(tmp_path, text)
    git = git_apply(tmp_path, text)
    assert ours.applies == forward.applies, forward.output
    assert theirs.applies == git.applies, git.output
    assert bool(ours.disagreements) == (forward.applies != git.applies)
    if theirs.applies:
        assert tuple(h.offset for h in theirs.hunks if h.offset) == git.offsets, git.output
        write_tree(tmp_path / "git", {"f.txt": content})
        assert really_apply(tmp_path / "git", "git-apply", text.encode())[1]["f.txt"] == theirs.files["f.txt"]
    if ours.applies:
        assert tuple(h.offset for h in ours.hunks if h.offset) == forward.offsets
        assert ours.files["f.txt"] == gnu_patch_apply(tmp_path, text, "f.txt")
        return
    reverse = gnu_patch(tmp_path, text, reverse=True)
    assert (ours.status == "already-applied") == reverse.applies, reverse.output
    if ours.status == "fuzz":
        assert gnu_patch(tmp_path, text, fuzz=2).fuzz
    if variant == "applied":
        assert ours.status == "already-applied"


def test_the_cases_reach_where_the_tools_disagree():
    """File-edge drift is where GNU and git part: the cases must include both directions."""
    split = set()
    for param in _cases():
        _, _, old, new, target = param.values
        content = "".join(target).encode()
        patch = parse_patch("case.patch", _diff(old, new))
        gnu = apply_patch(lambda p, c=content: c, patch, "gnu-patch")
        git = apply_patch(lambda p, c=content: c, patch, "git-apply")
        if gnu.applies != git.applies:
            split.add("gnu" if gnu.applies else "git")
    assert split == {"gnu", "git"}


def test_the_cases_cover_every_verdict():
    """The agreement above means something only if every verdict occurs among the cases."""
    seen = {}
    for param in _cases():
        _, _, old, new, target = param.values
        content = "".join(target).encode()
        result = apply_patch(lambda p, c=content: c, parse_patch("case.patch", _diff(old, new)), "gnu-patch")
        seen[result.status] = seen.get(result.status, 0) + 1
    assert {"exact", "offset", "fuzz", "already-applied", "fails"} <= set(seen), seen
