"""Property tests: any value forklift writes into a Containerfile or names a wheel with, any wheel RECORD, any
campaign.toml and any git tree gives a result or one ForkliftError line, never another exception, and stays
bounded: an accepted Containerfile has exactly its own lines, an accepted wheel name is one plain file name, an
accepted campaign plans at most MAX_BOOTS boots, and a git tree passes its bound exactly when it is within it.

Bounded for CI (the "ci" profile: a few seconds); `scripts/fuzz` runs the "long" profile (conftest.py).
"""

from __future__ import annotations

import json
import resource
import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from forklift.campaign import load_campaign_file, make_campaign_plan
from forklift.campaign.schema import MAX_BOOTS
from forklift.config.load import parse_config
from forklift.errors import ForkliftError
from forklift.installed.package import read_record
from forklift.ship.containerfile import render
from forklift.ship.wheel import _renamed_filename
from forklift.source.gitpin import bound_tree
from forklift.source.limits import MAX_DEPTH, Limits, UnsafeMember
from tests.fixtures.engine import distribution_toml

MAX_RSS_KIB = 512 << 10  # ru_maxrss is in KiB on Linux
# Text built from what a grammar accepts and what breaks out of a line or a word.
PIECES = st.sampled_from(
    ["vllm", "cpu", "0.32.0", "-", "_", ".", "/", ":", "@", "+", "$", ";", "\n", "\r", " ", '"', "\\", "..", "A", "é",
     "sha256:" + "a" * 64, "py3", "none", "any", ".whl", "{version}", "[::1]", "5000", "\x00", "\x1b"]
)  # fmt: skip
TEXT = st.one_of(st.text(max_size=40), st.lists(PIECES, max_size=12).map("".join))
CONTAINERFILE_LINES = ("# Written by", "# Build it", "FROM ", "COPY [", "RUN [", "RUN [", "LABEL ")


@given(base=TEXT, package=TEXT, version=TEXT, wheel=TEXT, label=TEXT)
@example(base="ubuntu\nRUN touch /pwned", package="vllm", version="1.0", wheel="a-1.0-py3-none-any.whl", label="x")
@example(base="ubuntu:1", package="vllm", version="1.0", wheel="a-1.0-py3-none-any;id;.whl", label="x")
def test_a_containerfile_has_exactly_its_own_lines(base, package, version, wheel, label):
    try:
        text = render("f", base, package, version, wheel, {"io.forklift.pin": label}, 3)
    except ForkliftError as exc:
        assert "\n" not in str(exc) and "\r" not in str(exc)
        return
    lines = text.replace(" \\\n      ", " ").splitlines()
    assert len(lines) == len(CONTAINERFILE_LINES) and all(map(str.startswith, lines, CONTAINERFILE_LINES))
    for value in (base, package, version, wheel, label):
        assert value.isascii() and value.isprintable() and not set(value) & set(" $;\"\\'`")


@given(filename=TEXT, version=st.sampled_from(["0.32.0+forklift.e6745a56", "1.0", "1.0\n", "../x"]))
@example(filename="../ESCAPED-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl", version="1.0")
def test_a_wheel_name_is_one_plain_file_name(filename, version):
    try:
        name = _renamed_filename(filename, version, "f")
    except ForkliftError as exc:
        assert "\n" not in str(exc)
        return
    assert Path(name).name == name and name not in (".", "..") and name.endswith(".whl") and name.isprintable()


ROW = st.one_of(
    st.sampled_from(["vllm/a.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,1", "vllm/b.py,,", "x,y", '"a']),
    st.text(max_size=60),
)


@given(rows=st.lists(ROW, max_size=30), newline=st.sampled_from(["\n", "\r\n", "\r", ""]))
def test_any_record_is_rows_or_one_line(rows, newline):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "RECORD"
        path.write_bytes(newline.join(rows).encode("utf-8", "surrogatepass"))
        try:
            record = read_record(path, "vllm")
        except ForkliftError as exc:
            assert "\n" not in str(exc)
            return
    assert all(key.startswith("vllm/") for key in record)


PROFILES = """
[profiles.tiny]
model = "/models/tiny"
[profiles.tiny.axes.spec.off]
[profiles.tiny.axes.spec.ngram]
"""
NUMBER = st.one_of(st.integers(-3, 3), st.integers(0, 2000), st.integers(), st.sampled_from([10**8, 2**63 - 1]))
TOML_VALUE = st.one_of(NUMBER.map(str), st.sampled_from(['"x"', "[]", "{}", "true", "1.5", "inf", "nan"]))


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    repeats=TOML_VALUE,
    warmup=TOML_VALUE,
    builds=st.integers(0, 70),
    choices=st.lists(st.sampled_from(["off", "ngram", "eagle"]), max_size=6),
    axes=st.integers(0, 40),
    concurrency=st.lists(NUMBER, max_size=70),
    ladder=st.sampled_from(["", "VLLM_X=1,2", "VLLM_X=1:64:1", "VLLM_X=1:100000:1", "x"]),
)
def test_any_campaign_plans_within_max_boots_or_is_one_line(
    repeats, warmup, builds, choices, axes, concurrency, ladder
):
    build_lines = "".join(f'[builds.b{i}]\npython = "/venvs/{i}/bin/python"\n' for i in range(builds))
    axis_lines = ", ".join([f"spec = {json.dumps(choices)}", *(f"a{i} = ['1', '2']" for i in range(axes))])
    text = (
        f"repeats = {repeats}\nwarmup_boots = {warmup}\n{build_lines}"
        f'[[settings]]\nprofile = "tiny"\naxes = {{ {axis_lines} }}\n'
        f'[[suites]]\nkind = "bench"\nsynthetic = "16:16"\nconcurrency = {json.dumps(concurrency)}\n'
        + (f'[[suites]]\nkind = "ladder"\naxis = "{ladder}"\n' if ladder else "")
    )
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "forklift.toml").write_text(distribution_toml(PROFILES))
        (Path(folder) / "campaign.toml").write_text(text)
        try:
            campaign = load_campaign_file(Path(folder) / "campaign.toml")
            config = parse_config((Path(folder) / "forklift.toml").read_text(), Path(folder) / "forklift.toml")
            plan = make_campaign_plan(campaign, config)
        except ForkliftError as exc:
            assert "\n" not in str(exc)
            return
    assert len(plan.cells) + len(plan.warmups) <= MAX_BOOTS
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < MAX_RSS_KIB


_REPO: list[Path] = []  # one repository for every example: trees are objects, made in it as needed


def repo() -> Path:
    if not _REPO:
        folder = Path(tempfile.mkdtemp(prefix="forklift-fuzz-git-"))
        subprocess.run(["git", "init", "-q", "--bare", str(folder)], check=True)
        _REPO.append(folder)
    return _REPO[0]


def git(*args: str, stdin: bytes = b"") -> str:
    return subprocess.run(["git", "--git-dir", str(repo()), *args], input=stdin, capture_output=True, check=True).stdout.decode().strip()  # fmt: skip


_CHAINS: dict[int, str] = {}  # n -> a tree `a/a/.../f` n folders deep, made once


def chain(n: int) -> str:
    if n not in _CHAINS:
        blob = git("hash-object", "-w", "--stdin", stdin=b"deep")
        tree = git("mktree", stdin=f"100644 blob {blob}\tf\n".encode())
        for _ in range(n):
            tree = git("mktree", stdin=f"040000 tree {tree}\ta\n".encode())
        _CHAINS[n] = tree
    return _CHAINS[n]


@settings(max_examples=max(settings.default.max_examples // 5, 10))  # each example runs git a few times
@given(
    fanout=st.integers(1, 9),
    depth=st.integers(0, 6),
    deep=st.sampled_from([0, 1, 254, 255]),
    size=st.integers(0, 3000),
    members=st.integers(1, 5000),
    total=st.integers(1, 10**7),
)
def test_a_git_tree_passes_its_bound_exactly_when_within_it(fanout, depth, deep, size, members, total):
    """A fan of `fanout`^(depth + 1) files of `size` bytes beside one file `deep` + 1 folders down."""
    blob = git("hash-object", "-w", "--stdin", stdin=b"x" * size)
    fan = git("mktree", stdin="".join(f"100644 blob {blob}\tf{i}\n" for i in range(fanout)).encode())
    for _ in range(depth):
        fan = git("mktree", stdin="".join(f"040000 tree {fan}\td{i}\n" for i in range(fanout)).encode())
    top = git("mktree", stdin=f"040000 tree {fan}\tfan\n040000 tree {chain(deep)}\tdeep\n".encode())
    files = fanout ** (depth + 1) + 1
    within = files <= members and fanout ** (depth + 1) * size + 4 <= total and deep + 1 < MAX_DEPTH
    try:
        bound_tree(repo(), git("commit-tree", top, "-m", "t"), "t", Limits(max_bytes=total, max_members=members))
    except UnsafeMember as exc:
        assert not within and "\n" not in str(exc), str(exc)
        return
    assert within
