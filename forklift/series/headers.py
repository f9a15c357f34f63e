"""Patch headers as other tools write them: DEP-3, git format-patch mail, Electron trailers, forklift's own.

A header is the text before the first diff. Fields are read as written and
mapped onto one vocabulary, so a Debian quilt series or a git format-patch
export moves in without rewriting a patch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Other tools' names for the same field, mapped onto forklift's vocabulary.
SYNONYMS = {
    "subject": "description",
    "from": "author",
    "upstream": "forwarded",
    "bug-vllm": "bug",
}
# A field is written as DEP-3, mail headers and git trailers write them: a capitalized name, a colon.
# (A lowercase "kind: fix." inside prose is prose.)
_FIELD = re.compile(r"^([A-Z][A-Za-z0-9-]*):[ \t]*(.*)$")


_TRAILER = re.compile(r"^([A-Za-z0-9-]+)[ \t]*:[ \t]*(.*)$")
_GIT_GENERATED = ("Signed-off-by: ",)


def is_divider(line: str) -> bool:
    """git's end of a message: a line starting with '---' then whitespace or its end (the diffstat follows)."""
    return line.startswith("---") and (len(line) == 3 or line[3].isspace())


_PATCH_PREFIX = re.compile(r"^\[PATCH[^\]]*\]\s*")


@dataclass(frozen=True)
class Header:
    """Header fields by lower-case name (first value wins) plus the free text around them."""

    fields: dict[str, str] = field(default_factory=dict)
    body: str = ""

    def get(self, name: str, default: str = "") -> str:
        return self.fields.get(name, default)

    @property
    def description(self) -> str:
        """First line of the description, or of the free text when there is no field."""
        text = self.fields.get("description") or self.body
        return text.strip().splitlines()[0].strip() if text.strip() else ""


def _add(fields: dict[str, str], name: str, value: str) -> None:
    key = SYNONYMS.get(name.lower(), name.lower())
    if value and key not in fields:
        fields[key] = value


def _parse_mail(text: str) -> Header:
    """git format-patch: 'From <sha> <date>' line, mail headers, blank line, body, '---', diffstat."""
    lines = text.splitlines()[1:]
    fields: dict[str, str] = {}
    i = 0
    last = None
    while i < len(lines) and lines[i].strip():
        line = lines[i]
        if line[:1] in " \t" and last:  # RFC 822 folded header
            if last in fields:
                fields[last] += " " + line.strip()
        elif m := _FIELD.match(line):
            name, value = m.group(1), m.group(2).strip()
            if name.lower() == "subject":
                value = _PATCH_PREFIX.sub("", value)
            last = SYNONYMS.get(name.lower(), name.lower())
            _add(fields, name, value)
        i += 1
    body_lines = []
    for line in lines[i + 1 :]:
        if is_divider(line):  # the diffstat follows: not part of the message
            break
        body_lines.append(line)
    body, trailers = split_trailers(body_lines)
    for name, value in trailers:
        _add(fields, name, value)
    return Header(fields=fields, body=body)


def _trailer(line: str) -> tuple[str, str] | None:
    """git's trailer line: a token of letters, digits and '-', optional blanks, ':' (trailer.c find_separator)."""
    m = _TRAILER.match(line)
    return (m.group(1), m.group(2).strip()) if m else None


def split_trailers(lines: list[str]) -> tuple[str, list[tuple[str, str]]]:
    """(the text before the trailers, the trailers) as `git interpret-trailers --parse` reads the last paragraph:
    every line a trailer (or an indented continuation), or at least a quarter of them when one is git's own
    (Signed-off-by, cherry picked from); continuations are unfolded onto their trailer."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    start = len(lines)
    while start > 0 and lines[start - 1].strip():
        start -= 1
    paragraph = lines[start:]
    trailers: list[list[str]] = []
    plain = continuations = 0
    recognized = False
    for line in paragraph:
        if line[:1] in " \t" and trailers:
            trailers[-1][1] += " " + line.strip()
            continuations += 1
            continue
        found = _trailer(line) if line[:1] not in " \t" else None
        if found:
            trailers.append(list(found))
            recognized |= line.startswith(_GIT_GENERATED)
        else:
            plain += 1 + continuations  # git counts the continuation lines of a non-trailer as non-trailers
        continuations = 0
    if trailers and (not plain or (recognized and len(trailers) * 3 >= plain)):
        return "\n".join(lines[:start]).strip(), [(k, v.strip()) for k, v in trailers]
    return "\n".join(lines).strip(), []


def _parse_dep3(text: str) -> Header:
    """DEP-3: 'Field: value' lines with space-indented continuations; other lines are free text.
    A '---' line ends the header (DEP-3 and git agree: what follows is notes or a diffstat)."""
    fields: dict[str, str] = {}
    free: list[str] = []
    last = None
    for line in text.splitlines():
        if is_divider(line):
            break
        if line[:1] in " \t" and last:
            continuation = line.strip()
            fields[last] += "\n" + ("" if continuation == "." else continuation)
            continue
        m = _FIELD.match(line)
        if m:
            last = SYNONYMS.get(m.group(1).lower(), m.group(1).lower())
            if last in fields:
                last = None  # a repeated field keeps its first value
                continue
            _add(fields, m.group(1), m.group(2).strip())
            if last not in fields:
                fields[last] = ""
        else:
            last = None
            free.append(line)
    body, trailers = split_trailers(free)  # a trailer block git would read (any case) counts too
    for name, value in trailers:
        _add(fields, name, value)
    return Header(fields={k: v.strip() for k, v in fields.items() if v.strip()}, body=body)


def parse_header(text: str) -> Header:
    if text.startswith("From ") and re.match(r"^From [0-9a-f]{7,40} ", text):
        return _parse_mail(text)
    return _parse_dep3(text)
