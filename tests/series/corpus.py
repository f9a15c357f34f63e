"""The differential corpus: real Debian source packages, their quilt series applied three ways.

For each package of data/debian-corpus.toml: fetch it with `apt-get source
--download-only` through a PRIVATE apt configuration (its own sources.list,
state and cache under the test cache; the system's apt state is never read or
written), extract it with `dpkg-source -x --skip-patches`, then apply its
series with `quilt push -a --fuzz=0` (GNU patch), with `git apply` patch by
patch, and with forklift's engine under each applier. Every verdict, every hunk
offset and every touched file's final bytes must agree.

The engine is driven directly (the series is read here the way quilt reads it:
subfolder entries, -pN options, unlisted files ignored), so the comparison
holds the engine alone. Run it all with `scripts/corpus`; the network-marked
test runs the packages marked `ci`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock

from forklift.config.toml import tomllib
from forklift.fsio import tree_reader
from forklift.series.apply import Applier, Overlay, PatchResult, apply_patch
from forklift.series.check import whitespace_findings
from forklift.series.model import Patch, PatchError, parse_patch
from forklift.series.tree import RECORD, write_tree
from tests.series.peers import offsets, run_tool

DATA = Path(__file__).parent / "data" / "debian-corpus.toml"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


class ArchiveUnreachable(RuntimeError):
    """apt could not reach Debian's archive (the network tests skip, saying so)."""


_OFFLINE = ("Could not resolve", "Temporary failure", "Failed to fetch", "Could not connect", "Unable to connect")


def _apt(argv: list[str], cwd: Path, env: dict[str, str], what: str) -> None:
    proc = subprocess.run(argv, check=False, cwd=cwd, env=env, capture_output=True, text=True)
    offline = any(m in proc.stderr for m in _OFFLINE)  # apt-get update exits 0 on a failed fetch
    if proc.returncode == 0 and not offline:
        return
    if offline:
        raise ArchiveUnreachable(f"{what}: Debian's archive is unreachable: {proc.stderr.strip().splitlines()[-1]}")
    raise RuntimeError(f"{what}: {' '.join(argv[:2])} failed: {proc.stderr.strip()[-500:]}")


@dataclass(frozen=True)
class Package:
    key: str
    name: str
    version: str
    ci: bool

    @property
    def label(self) -> str:
        return f"{self.name}_{self.version.split(':')[-1]}"


@dataclass
class PeerPatch:
    """What a real tool did with one patch: applied or not, and the hunks it reported off their line."""

    applies: bool
    offsets: list[tuple[int, int]] = field(default_factory=list)  # (hunk number, offset) in report order
    output: str = ""
    whitespace: set[str] | None = None  # git's whitespace rules the patch breaks (git apply runs only)


@dataclass
class Outcome:
    package: str
    applier: Applier
    patches: int = 0
    agree: int = 0
    offsets: int = 0  # hunks landed off their stated line, compared
    files: int = 0  # touched files whose final bytes were compared
    entries: int = 0  # tree entries (files, folders, links) compared with their kind, mode and target
    whitespace: int = 0  # patches whose whitespace findings were compared with git's
    refused: int = 0  # patches the real tool refuses (forklift must refuse them too)
    split: int = 0  # patches where forklift says the other applier's verdict differs
    disagreements: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


def cache_root() -> Path:
    return Path(os.environ.get("FORKLIFT_TEST_CACHE") or Path.home() / ".cache" / "forklift-tests") / "debian-corpus"


def packages(ci_only: bool = False) -> list[Package]:
    data = tomllib.loads(DATA.read_text(encoding="utf-8"))
    out = [
        Package(key, spec.get("name", key), spec["version"], bool(spec.get("ci", False)))
        for key, spec in data["packages"].items()
    ]
    return [p for p in out if p.ci or not ci_only]


def system_mirror(suite: str, etc: Path = Path("/etc/apt")) -> tuple[str, str]:
    """(URI, keyring) of the system's apt source for `suite` main, read from its sources.list and
    sources.list.d (one-line and deb822 forms): the corpus downloads from the mirror the box uses."""
    stanzas: list[dict[str, str]] = []
    for path in [etc / "sources.list", *sorted((etc / "sources.list.d").glob("*"))]:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".sources":
            for block in re.split(r"\n\s*\n", text):
                fields = dict(
                    (k.strip().lower(), v.strip())
                    for k, _, v in (line.partition(":") for line in block.splitlines() if not line.startswith("#"))
                    if v
                )
                stanzas.append(fields)
        elif path.suffix == ".list" or path.name == "sources.list":
            for line in text.splitlines():
                m = re.match(r"\s*(deb(?:-src)?)\s+(?:\[(.*?)\]\s+)?(\S+)\s+(\S+)\s+(.*)", line)
                if m:
                    options = dict(o.split("=", 1) for o in (m.group(2) or "").split() if "=" in o)
                    stanzas.append(
                        {
                            "types": m.group(1),
                            "uris": m.group(3),
                            "suites": m.group(4),
                            "components": m.group(5),
                            "signed-by": options.get("signed-by", ""),
                        }
                    )
    for fields in stanzas:
        if suite in fields.get("suites", "").split() and "main" in fields.get("components", "").split():
            return fields["uris"].split()[0], fields.get("signed-by") or KEYRING
    raise ArchiveUnreachable(f"no apt source for {suite} main in {etc} (the corpus reads the system's mirror)")


def _apt_config(root: Path) -> Path:
    """A private apt: its own sources.list (deb-src for the suite, from the system's mirror), state, cache
    and config parts."""
    data = tomllib.loads(DATA.read_text(encoding="utf-8"))
    apt = root / "apt"
    for sub in ("etc/sources.list.d", "etc/apt.conf.d", "etc/preferences.d", "state/lists/partial", "cache"):
        (apt / sub).mkdir(parents=True, exist_ok=True)
    mirror, keyring = system_mirror(data["suite"])
    (apt / "etc" / "sources.list").write_text(
        f"deb-src [signed-by={keyring}] {mirror} {data['suite']} main\n", encoding="utf-8"
    )
    conf = apt / "apt.conf"
    conf.write_text(
        "\n".join(
            [
                f'Dir::Etc "{apt}/etc";',
                f'Dir::Etc::SourceList "{apt}/etc/sources.list";',
                f'Dir::Etc::SourceParts "{apt}/etc/sources.list.d";',
                f'Dir::Etc::Parts "{apt}/etc/apt.conf.d";',
                f'Dir::Etc::Preferences "{apt}/etc/preferences";',
                f'Dir::Etc::PreferencesParts "{apt}/etc/preferences.d";',
                f'Dir::State "{apt}/state";',
                'Dir::State::status "/dev/null";',
                f'Dir::Cache "{apt}/cache";',
                'APT::Sandbox::User "root";' if os.geteuid() == 0 else "",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    return conf


def fetch(package: Package) -> Path:
    """The package's .dsc in the cache, downloaded once through the private apt."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    folder = root / "src" / package.label
    with FileLock(str(root / "fetch.lock")):
        found = sorted(folder.glob("*.dsc")) if folder.exists() else []
        if found:
            return found[0]
        env = {**os.environ, "APT_CONFIG": str(_apt_config(root))}
        if not any((root / "apt" / "state" / "lists").glob("*Sources")):
            _apt(["apt-get", "update", "-qq"], root, env, package.label)
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        _apt(
            ["apt-get", "source", "--download-only", "-qq", f"{package.name}={package.version}"],
            partial,
            env,
            package.label,
        )
        partial.rename(folder)
        return min(folder.glob("*.dsc"))


def pristine(package: Package) -> Path:
    """The unpacked source with no patch applied (cached beside the download)."""
    dsc = fetch(package)
    tree = cache_root() / "tree" / package.label
    with FileLock(str(cache_root() / "extract.lock")):
        if not (tree / "debian" / "patches" / "series").exists():
            shutil.rmtree(tree, ignore_errors=True)
            tree.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                ["dpkg-source", "--no-check", "-x", "--skip-patches", str(dsc), str(tree)],
                check=True,
                capture_output=True,
            )
    return tree


def series_entries(tree: Path) -> list[tuple[str, int]]:
    """debian/patches/series as quilt reads it: first word the patch (may be in a subfolder), -pN."""
    entries = []
    for raw in (tree / "debian" / "patches" / "series").read_bytes().decode("utf-8", "surrogateescape").splitlines():
        words = re.sub(r"(^|[ \t]+)#.*", "", raw).split()
        if not words:
            continue
        strip = next((int(w[2:]) for w in words[1:] if re.fullmatch(r"-p\d+", w)), 1)
        entries.append((words[0], strip))
    return entries


def _copy(tree: Path, dest: Path) -> Path:
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", str(tree), str(dest)], check=True)
    return dest


def run_quilt(tree: Path, work: Path) -> tuple[dict[str, PeerPatch], Path]:
    """`quilt push -a --fuzz=0` on a fresh copy: each patch's result until the first that fails."""
    copy = _copy(tree, work / "quilt")
    env = {**os.environ, "QUILT_PATCHES": "debian/patches", "QUILT_PC": ".pc"}
    _, output = run_tool(["quilt", "--quiltrc", "/dev/null", "push", "-a", "--fuzz=0"], copy, env)
    results: dict[str, PeerPatch] = {}
    current = None
    for line in output.splitlines():
        if m := re.match(r"Applying patch (?:debian/patches/)?(.+)$", line):
            current = m.group(1)
            results[current] = PeerPatch(True)
        elif current and (found := offsets(line)):
            results[current].offsets += found
        elif current and re.match(r"Patch (?:debian/patches/)?.+ does not apply", line):
            results[current].applies = False
        if current:
            results[current].output += line + "\n"
    return results, copy


def run_git(tree: Path, work: Path, entries: list[tuple[str, int]]) -> tuple[dict[str, PeerPatch], Path]:
    """`git apply -v -pN` patch by patch on a fresh copy (outside any repository); before each, git's
    default whitespace rules as `git apply --check --whitespace=error-all` counts them (`error` shows only 5)."""
    copy = _copy(tree, work / "git")
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(work)}
    results = {}
    for name, strip in entries:
        patch = tree / "debian" / "patches" / name
        _, said = run_tool(["git", "apply", "--check", "--whitespace=error-all", f"-p{strip}", str(patch)], copy, env)
        ok, output = run_tool(["git", "apply", "-v", f"-p{strip}", str(patch)], copy, env)
        rules = {rule for rule, words in WHITESPACE.items() if words in said} if ok else set()
        results[name] = PeerPatch(ok, offsets(output), output, rules)
    return results, copy


WHITESPACE = {  # forklift's finding -> git's words for it
    "trailing whitespace": "trailing whitespace",
    "space before tab in indent": "space before tab in indent",
    "new blank line at end of file": "new blank line at EOF",
}


def run_forklift(tree: Path, entries: list[tuple[str, int]], applier: Applier) -> tuple[dict, Overlay]:
    """The engine over the pristine tree, patch by patch; a patch it refuses to read is a verdict too."""
    overlay = Overlay(tree_reader(tree))
    results: dict[str, tuple[Patch, PatchResult] | str] = {}
    for name, strip in entries:
        raw = (tree / "debian" / "patches" / name).read_bytes()
        try:
            patch = parse_patch(name, raw.decode("utf-8", "surrogateescape"), strip)
        except PatchError as exc:
            results[name] = str(exc)
            continue
        result = apply_patch(overlay.read, patch, applier)
        overlay.files.update(result.files)
        results[name] = patch, result
    return results, overlay


def _listing(root: Path, skip: tuple[str, ...]) -> dict[str, tuple]:
    """Every entry below `root` (but the top-level `skip`): (kind, exec bit, size, mtime) of a file,
    a link's target, or a folder."""
    out: dict[str, tuple] = {}
    for folder, dirs, files in os.walk(root):
        rel_folder = Path(folder).relative_to(root)
        if rel_folder == Path("."):
            dirs[:] = [d for d in dirs if d not in skip]
            files = [f for f in files if f not in skip]
        for name in dirs + files:
            place = Path(folder) / name
            info = place.lstat()
            rel = (rel_folder / name).as_posix()
            if stat.S_ISLNK(info.st_mode):
                out[rel] = ("link", os.readlink(place))
            elif stat.S_ISDIR(info.st_mode):
                out[rel] = ("folder",)
            else:
                out[rel] = ("file", bool(info.st_mode & stat.S_IXUSR), info.st_size, info.st_mtime_ns)
    return out


def _tree_differences(pristine: Path, peer: Path, ours: Path) -> tuple[int, list[str]]:
    """Whole trees compared: every path, its kind, exec bit and link target; a file's bytes wherever
    either tree holds it other than pristine's copy (size or mtime differ: both copies keep mtimes)."""
    before = _listing(pristine, ())
    theirs, mine = _listing(peer, (".pc",)), _listing(ours, (RECORD,))
    problems = []
    for path in sorted(theirs.keys() | mine.keys()):
        a, b = theirs.get(path), mine.get(path)
        if a is None or b is None:
            problems.append(f"{path}: only in {'forklift' if a is None else 'the peer'}'s tree")
        elif a[:2] != b[:2]:
            problems.append(f"{path}: {a[:2]} in the peer's tree, {b[:2]} in forklift's")
        elif _touched(a, b, before.get(path)) and (peer / path).read_bytes() != (ours / path).read_bytes():
            problems.append(f"{path}: final bytes differ from the peer's tree")
    return len(theirs), problems


def _touched(theirs: tuple, mine: tuple, pristine: tuple | None) -> bool:
    """A file either tree holds other than pristine's copy (what is not must be pristine's bytes in both)."""
    return theirs[0] == "file" and (theirs != pristine or mine != pristine)


def compare(package: Package, applier: Applier, work: Path) -> Outcome:
    """Hold forklift under `applier` to its real tool on every patch, offset, whitespace rule and the
    whole patched tree (what `forklift tree` writes)."""
    tree = pristine(package)
    entries = series_entries(tree)
    outcome = Outcome(package.label, applier)
    start = time.perf_counter()
    if applier == "gnu-patch":
        peer, copy = run_quilt(tree, work)
    else:
        peer, copy = run_git(tree, work, entries)
    outcome.seconds["peer"] = time.perf_counter() - start
    start = time.perf_counter()
    ours, overlay = run_forklift(tree, entries, applier)
    outcome.seconds["forklift"] = time.perf_counter() - start
    for name, _ in entries:
        theirs = peer.get(name)
        if theirs is None:
            continue  # quilt stopped before it (after a patch that does not apply): not compared
        outcome.patches += 1
        read = ours[name]
        if isinstance(read, str):
            outcome.disagreements.append(
                f"{name}: forklift refuses to read it ({read}); the peer applies={theirs.applies}"
            )
            continue
        patch, mine = read
        mine_offsets = [(h.index, h.offset) for h in mine.hunks if h.offset and h.status in ("exact", "offset")]
        if mine.applies != theirs.applies:
            outcome.disagreements.append(
                f"{name}: forklift {mine.status} ({'; '.join(mine.reasons())}), the peer applies={theirs.applies}: "
                + theirs.output.strip().replace("\n", " | ")[-400:]
            )
        elif mine.applies and mine_offsets != theirs.offsets:
            outcome.disagreements.append(f"{name}: offsets forklift {mine_offsets} vs peer {theirs.offsets}")
        else:
            outcome.agree += 1
            outcome.offsets += len(theirs.offsets)
        if theirs.whitespace is not None and theirs.applies:
            found = {rule for rule in WHITESPACE for f in whitespace_findings([patch], [mine]) if rule in f.message}
            if found != theirs.whitespace:
                outcome.disagreements.append(
                    f"{name}: whitespace forklift {sorted(found)}, git {sorted(theirs.whitespace)}"
                )
            else:
                outcome.whitespace += 1
        outcome.refused += not theirs.applies
        outcome.split += bool(mine.disagreements)
    gnu_stopped = applier == "gnu-patch" and not all(p.applies for p in peer.values())
    if not gnu_stopped:  # quilt stops at a failing patch where forklift goes on: trees compare only without one
        start = time.perf_counter()
        written = write_tree(tree, work / "forklift", overlay.files, {})
        outcome.entries, problems = _tree_differences(tree, copy, written)
        outcome.files = len(overlay.changed())
        outcome.disagreements += problems
        outcome.seconds["trees"] = time.perf_counter() - start
    return outcome


def run(selection: list[Package], work: Path, appliers: tuple[Applier, ...]) -> list[Outcome]:
    outcomes = []
    for package in selection:
        for applier in appliers:
            outcome = compare(package, applier, work / package.label)
            shutil.rmtree(work / package.label, ignore_errors=True)
            outcomes.append(outcome)
            print(
                f"{package.label:<42} {applier:<9} {outcome.patches:>4} patches {outcome.agree:>4} agree "
                f"{outcome.offsets:>4} offsets {outcome.files:>5} files {outcome.entries:>6} entries "
                f"{outcome.whitespace:>4} ws {outcome.refused:>2} refused "
                f"{outcome.split:>2} split  peer {outcome.seconds['peer']:.2f}s "
                f"forklift {outcome.seconds['forklift']:.2f}s trees {outcome.seconds.get('trees', 0):.2f}s",
                flush=True,
            )
            for line in outcome.disagreements[:20]:
                print(f"    {line}", flush=True)
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description="forklift's engine vs quilt and git apply on real Debian series")
    parser.add_argument("--ci", action="store_true", help="only the packages the network test runs")
    parser.add_argument("--package", action="append", help="only these packages (by name)")
    parser.add_argument("--applier", choices=["gnu-patch", "git-apply"], action="append")
    args = parser.parse_args()
    selection = [p for p in packages(args.ci) if not args.package or p.name in args.package or p.key in args.package]
    appliers = tuple(args.applier or ("gnu-patch", "git-apply"))
    work = cache_root() / "work"
    outcomes = run(selection, work, appliers)
    for applier in appliers:
        mine = [o for o in outcomes if o.applier == applier]
        total = sum(o.patches for o in mine)
        agree = sum(o.agree for o in mine)
        files, tree_entries = sum(o.files for o in mine), sum(o.entries for o in mine)
        wrong = sum(len(o.disagreements) for o in mine)
        refused, split = sum(o.refused for o in mine), sum(o.split for o in mine)
        whitespace = sum(o.whitespace for o in mine)
        print(
            f"{applier}: {len(mine)} packages, {total} patches, {agree} agree, {files} changed files in "
            f"{tree_entries} tree entries compared, "
            + (f"{whitespace} whitespace verdicts agree, " if applier == "git-apply" else "")
            + f"{refused} refused by the tool, {split} flagged as split between the tools, {wrong} disagreements"
        )
    return 1 if any(o.disagreements for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
