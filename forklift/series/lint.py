"""`forklift lint`: header hygiene and leaks, per patch (pure; no network).

The rules, each a name a finding carries and a patch may waive with `Lint-Ignore: NAME[, NAME]`:

- dep3-description: no Description (or Subject) line.
- dep3-origin: neither Origin nor Author (or From): DEP-3 wants one of them.
- dep3-forwarded: no Forwarded state where DEP-3 would read one in (a patch not from upstream), or a
  state that is neither `no`, `not-needed`, `yes` nor where it went (a URL, a message id). DEP-3 reads
  any other value as "forwarded", so `Forwarded: not-yet` claims the opposite of what it means.
- secret: an added line holds a private key block or a token of a known shape (AWS, GitHub, Hugging
  Face, OpenAI, Slack, Google), or assigns a long literal to a name that says key, token, secret or
  password.
- private-path: an added line names someone's home folder (/home/NAME/, /Users/NAME/, C:\\Users\\NAME\\).

Only added lines are read for leaks: what upstream already ships is upstream's business.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel

from forklift.series.model import Patch, Series

RULES = ("dep3-description", "dep3-origin", "dep3-forwarded", "secret", "private-path")
FORWARDED_STATES = ("no", "not-needed", "yes")
_WHERE_SENT = re.compile(r"^(?:[a-z][a-z0-9+.-]*:\S+|<?[^\s@]+@[^\s@]+>?)$", re.IGNORECASE)  # a URL, a message id
FROM_UPSTREAM = ("upstream", "backport")  # DEP-3: no Forwarded state needed for upstream's own change

_TOKENS = (
    ("a private key", r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----"),
    ("an AWS access key id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("a GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b"),
    ("a Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}\b"),
    ("an OpenAI key", r"\bsk-(?:proj-)?[A-Za-z0-9_-]{32,}"),
    ("a Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("a Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
)
_SECRET = re.compile("|".join(f"(?P<t{i}>{rx})" for i, (_, rx) in enumerate(_TOKENS)))
# NAME = "literal" where NAME says key/token/secret/password and the literal is long and not a placeholder
_ASSIGNED = re.compile(
    r"(?i)\b[\w.-]*(?:api[_-]?key|secret|token|passw(?:or)?d)[\w-]*[\"']?\s*[:=]\s*[\"']([^\"'\s${}<>]{16,})[\"']"
)
_HOME = re.compile(r"(?:/home/|/Users/|[A-Za-z]:\\\\?Users\\\\?)(?!\$|\{|<|~|USER\b|user\b|username\b)([\w.-]+)")
MAX_LINE = 4096  # longer added lines are read up to here: a minified blob is no reason to spend seconds


class LintFinding(BaseModel):
    patch: str
    rule: str
    message: str

    def line(self) -> str:
        return f"{self.patch}: {self.rule}: {self.message}"


@dataclass(frozen=True)
class _Added:
    file: str
    hunk: int
    text: str


def lint_series(series: Series) -> list[LintFinding]:
    """Every finding of every patch the series applies, in series order."""
    return [finding for patch in series.patches for finding in lint_patch(patch)]


def lint_patch(patch: Patch) -> list[LintFinding]:
    waived = {w.strip() for w in re.split(r"[,\s]+", patch.header.get("lint-ignore")) if w.strip()}
    found = [*_header_findings(patch), *_leak_findings(patch)]
    return [LintFinding(patch=patch.name, rule=rule, message=text) for rule, text in found if rule not in waived]


def _header_findings(patch: Patch) -> list[tuple[str, str]]:
    header = patch.header
    found = []
    if not header.get("description"):
        found.append(("dep3-description", "no Description: (or Subject:) line says what the patch does"))
    origin = header.get("origin")
    if not origin and not header.get("author"):
        found.append(("dep3-origin", "no Origin: (upstream, backport, vendor or other, and a URL) and no Author:"))
    forwarded = " ".join(header.get("forwarded").split())
    category = origin.split(",")[0].strip().lower()
    if not forwarded and category not in FROM_UPSTREAM and not header.get("applied-upstream"):
        found.append(
            ("dep3-forwarded", "no Forwarded: state (DEP-3 then reads it as forwarded): no, not-needed or the URL")
        )
    elif forwarded and forwarded.lower() not in FORWARDED_STATES and not _WHERE_SENT.match(forwarded):
        found.append(
            (
                "dep3-forwarded",
                f"Forwarded: {forwarded[:80]!r} is not a DEP-3 state (DEP-3 reads any value but 'no' and "
                "'not-needed' as forwarded): write no, not-needed, or the URL it was sent to",
            )
        )
    return found


def _added_lines(patch: Patch) -> list[_Added]:
    lines = []
    for f in patch.files:
        for number, hunk in enumerate(f.hunks, 1):
            for raw in hunk.added:
                text = raw[:MAX_LINE].decode("utf-8", "replace")
                lines.append(_Added(f.new_path or f.old_path or "?", number, text))
    return lines


def _leak_findings(patch: Patch) -> list[tuple[str, str]]:
    found = []
    for added in _added_lines(patch):
        where = f"{added.file} hunk #{added.hunk}"
        if token := _SECRET.search(added.text):
            what = _TOKENS[int(next(k for k, v in token.groupdict().items() if v)[1:])][0]
            found.append(("secret", f"{where} adds {what} ({_masked(token.group(0))})"))
        elif assigned := _ASSIGNED.search(added.text):
            found.append(("secret", f"{where} assigns a literal to a secret's name ({_masked(assigned.group(1))})"))
        if home := _HOME.search(added.text):
            found.append(("private-path", f"{where} names a home folder: {home.group(0)[:80]}"))
    return found


def _masked(secret: str) -> str:
    """Enough of it to find it, not enough to use it."""
    return secret[:4] + "…" + f" ({len(secret)} characters)"
