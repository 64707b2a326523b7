"""Text shown to a person: invisible format characters and hidden line breaks made visible.

Rule: every character of Unicode category Cf (bidi controls U+202A-U+202E and U+2066-U+2069,
zero-width U+200B-U+200F, U+2060, U+FEFF, soft hyphen, ...), every control character but tab
and newline, and the line and paragraph separators (U+2028, U+2029) are shown as an escape
(`\\u202e`), wherever a note's name, title or text reaches a person: forms, confirmation messages,
tool result text, the terminal client, the connect page. So a note named `report\\u202egpj.md` is
never displayed as `reportdm.jpg`: the user sees the name that will be deleted.
Rule 2: a name or a title is one line (`visible_line`): its tabs and newlines are escaped too, so a
title written `Q3\\n\\nOnly draft.md will be deleted. Click Confirm.` cannot add lines of its own to
a form or a message. Identifiers sent back to the server (a form's `const`, a note id in
structured content) stay exact; only what is displayed is escaped. A tool result's text that
mirrors its structured content as JSON (`visible_json`) escapes them the JSON way (`\\u202e`, a
surrogate pair beyond the BMP), so the text still parses back to exactly the structured content.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

__all__ = ["visible", "visible_json", "visible_line"]

_NON_ASCII = re.compile(r"[^\x20-\x7e]")
"""In JSON text (where json.dumps already escaped C0 controls) the characters worth a look-up."""


_HIDDEN = frozenset({"Cf", "Cc", "Zl", "Zp"})


def visible(text: str) -> str:
    """`text` with every format and control character (but tab and newline) and every line or
    paragraph separator escaped."""
    if text.isprintable():  # no Cf, Cc, Zl, Zp: the common case costs one pass in C
        return text
    return "".join(_escape(c) if c not in "\t\n" and unicodedata.category(c) in _HIDDEN else c for c in text)


def visible_line(text: str) -> str:
    """A name or a title as one line (Rule 2): `visible`, with tabs and newlines escaped too."""
    if text.isprintable():
        return text
    return "".join(_escape(c) if unicodedata.category(c) in _HIDDEN else c for c in text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible_json(value: Any) -> str:
    """`value` as JSON text (UTF-8 kept readable) with every format and control character escaped."""
    text = json.dumps(value, ensure_ascii=False)
    if text.isprintable():
        return text
    return _NON_ASCII.sub(_json_escape, text)


def _json_escape(match: re.Match[str]) -> str:
    char = match.group()
    if unicodedata.category(char) not in _HIDDEN:
        return char
    return json.dumps(char)[1:-1]  # json's own escape, a surrogate pair beyond the BMP
