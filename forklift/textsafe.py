"""Strings from receipts, servers and files made safe for where they are shown: one function per destination.

A receipt's hostname, label, model, cell name or prompt id is whatever the box that wrote it said. On a
terminal a control character is shown as a visible escape (ESC[2J clears nothing, an OSC 8 link is no link);
in markdown a string is text, never a heading, a tag, an image or a table column; on a shell command line a
word is quoted so that a newline, `$(...)` or a backtick stays part of the word.

Bottom layer: imports nothing from forklift.
"""

from __future__ import annotations

import re
import shlex

# C0 controls, DEL, C1 controls (0x9b is a one-byte CSI), and the bidirectional overrides that reorder text.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\e", "\a": "\\a", "\b": "\\b"}
# What would make markdown (GFM) text a link, an image, code or a table column: escaped. Emphasis (* _) is
# left alone: it restyles text but cannot add anything; headings need a line start, and newlines are escaped.
_MARKDOWN = re.compile(r"([\\`\[\]|!])")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _visible(char: str) -> str:
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def terminal(text: str, keep: str = "") -> str:
    """`text` for a terminal: every control character (but those in `keep`) shown as a visible escape."""
    return _CONTROL.sub(lambda m: m.group() if m.group() in keep else _visible(m.group()), text)


def markdown(text: object) -> str:
    """`text` as literal markdown: one line (a newline shows as `\\n`), no markup, no HTML, no table column."""
    shown = "" if text is None else str(text)
    shown = _MARKDOWN.sub(r"\\\1", shown)
    shown = "".join(_HTML.get(c, c) for c in shown)
    return terminal(shown)


def sh_word(text: str) -> str:
    """One shell word on one line: shlex.quote, or bash's $'...' when the word holds a control character."""
    if not _CONTROL.search(text):
        return shlex.quote(text)
    body = "".join(_sh_char(c) for c in text)
    return f"$'{body}'"


def _sh_char(char: str) -> str:
    if char in "\\'":
        return "\\" + char
    if not _CONTROL.match(char):
        return char
    return _visible(char) if ord(char) < 0x80 else f"\\u{ord(char):04x}"  # bash reads \xHH as a byte
