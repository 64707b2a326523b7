"""A note's Markdown structure as CommonMark reads it: front matter, headings, title.

Rule 1: front matter is a YAML block that opens with a line `---` as the note's very first line
and closes with the next line that is `---` or `...` (Obsidian, Jekyll, Hugo agree). It is not
Markdown: nothing in it is a heading. It is parsed with PyYAML's *safe* loader (libyaml when
present); a block that does not parse, or whose top level is not a mapping, is reported on the
`FrontMatter` (`error`) and never raises: a malformed note is still a note.

Rule 2: a heading is what CommonMark (markdown-it-py) says is one: ATX (`## x`) or setext
(`x` over `===`/`---`), never a line inside fenced or indented code, an HTML block (a comment),
or front matter. Only headings at the top level of the document count as section headings and
titles; one inside a block quote or a list item belongs to that quote or item.

Rule 3: line numbers are 1-based and count every line of the note, front matter included, so
they match what an editor shows. A heading's section runs from its line to the line before the
next heading of the same or a higher level (or the end of the note).

Rule 4: the title is the front matter's `title` (a string), else the text of the first level-1
heading, else the file stem. Only the first `TITLE_SCAN_BYTES` are looked at.

Rule 5: a note's aliases (Obsidian's other names for it) are the front matter's `aliases`: a list
of strings, or one string; numbers and dates count as their text, anything else is ignored.

Parsing costs about a microsecond per line; `first_h1` parses only up to the first line that
could be a level-1 heading, which is where a title almost always is.
"""

from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass
from typing import Any

import yaml
from markdown_it import MarkdownIt

__all__ = [
    "FRONT_MATTER_MAX_BYTES",
    "FrontMatter",
    "Heading",
    "first_h1",
    "headings",
    "json_value",
    "names_of",
    "split_front_matter",
    "title_of",
]

FRONT_MATTER_MAX_BYTES = 64 * 1024
"""A longer block is reported as an error and not parsed (YAML is not a format for megabytes)."""
JSON_NODES_MAX = 10_000
"""The most values `json_value` produces: YAML aliases can make a small block a huge tree."""

_FENCE = re.compile(r"(?:---|\.\.\.)[ \t]*")
_H1_CANDIDATE = re.compile(r"^ {0,3}(?:#(?:[ \t]|$)|=+[ \t]*$)", re.MULTILINE)
_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_PARSER = MarkdownIt("commonmark")
_PARSER.core.ruler.disable("inline")  # block structure only: heading text stays as written


@dataclass(frozen=True, slots=True)
class FrontMatter:
    """The YAML block at the top of a note. `end` is the offset just past its closing line; `lines`
    how many lines it spans, fences included. `data` is the parsed mapping (None on error)."""

    raw: str
    end: int
    lines: int
    data: dict[str, Any] | None
    error: str | None


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    text: str
    line: int
    """1-based line of the heading (the first line of a setext heading's text)."""
    end_line: int
    """1-based last line of the heading's section."""
    path: tuple[str, ...]
    """The texts of the enclosing headings and this one: ("Projects", "Atlas")."""


def split_front_matter(text: str) -> FrontMatter | None:
    """The front matter block of `text`, or None when the note has none (Rule 1)."""
    if not text.startswith("---"):
        return None
    first_end = text.find("\n")
    if first_end < 0 or text[:first_end].rstrip("\r \t") != "---":
        return None
    pos = first_end + 1
    count = 1
    while pos < len(text):
        end = text.find("\n", pos)
        line_end = len(text) if end < 0 else end
        count += 1
        if _FENCE.fullmatch(text, pos, line_end - (text[line_end - 1 : line_end] == "\r")):
            raw = text[first_end + 1 : pos]
            stop = line_end if end < 0 else end + 1
            data, error = _load(raw)
            return FrontMatter(raw=raw, end=stop, lines=count, data=data, error=error)
        if end < 0:
            break
        pos = end + 1
    return None  # never closed: CommonMark reads it as text (a thematic break and a paragraph)


def _load(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    if len(raw.encode()) > FRONT_MATTER_MAX_BYTES:
        return None, f"front matter longer than {FRONT_MATTER_MAX_BYTES} bytes is not read"
    try:
        data = yaml.load(raw, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        return None, f"front matter is not valid YAML{where}: {problem}"
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return None, f"front matter must be a mapping of keys to values, not a {type(data).__name__}"
    return data, None


def json_value(value: Any, budget: list[int] | None = None) -> Any:
    """A YAML value as JSON: dates as ISO text, keys as strings, non-finite floats as text, and at
    most `JSON_NODES_MAX` values (aliases let a small block expand exponentially)."""
    budget = budget if budget is not None else [JSON_NODES_MAX]
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError(f"front matter expands to more than {JSON_NODES_MAX} values")
    if isinstance(value, dict):
        return {str(k): json_value(v, budget) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [json_value(v, budget) for v in value]
    if isinstance(value, datetime.date | datetime.datetime | datetime.time):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _body(text: str) -> tuple[str, int, FrontMatter | None]:
    """The Markdown part of `text` and how many lines precede it (the front matter's)."""
    front = split_front_matter(text)
    if front is None:
        return text, 0, None
    return text[front.end :], front.lines, front


def headings(text: str) -> list[Heading]:
    """Every top-level heading of the note, in order, with its section's extent (Rules 2, 3)."""
    body, offset, _ = _body(text)
    total = offset + _line_count(body)
    found: list[tuple[int, str, int]] = []
    tokens = _PARSER.parse(body)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0 and token.map is not None:
            found.append((int(token.tag[1]), tokens[i + 1].content.strip(), token.map[0] + offset + 1))
    result: list[Heading] = []
    stack: list[tuple[int, str]] = []
    for n, (level, title, line) in enumerate(found):
        end = total
        for later_level, _, later_line in found[n + 1 :]:
            if later_level <= level:
                end = later_line - 1
                break
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        result.append(Heading(level, title, line, end, tuple(t for _, t in stack)))
    return result


def first_h1(text: str) -> str | None:
    """The text of the note's first top-level level-1 heading, or None (Rule 2)."""
    body, _, _ = _body(text)
    for attempt, candidate in enumerate(_H1_CANDIDATE.finditer(body)):
        if attempt == 2:  # the candidates so far were code or quotes: read the whole note once
            prefix = body
        else:
            line_end = body.find("\n", candidate.end())
            prefix = body if line_end < 0 else body[: line_end + 1]
        tokens = _PARSER.parse(prefix)
        for i, token in enumerate(tokens):
            if token.type == "heading_open" and token.tag == "h1" and token.level == 0:
                title = tokens[i + 1].content.strip()
                if title:
                    return title
        if attempt == 2:
            return None
    return None


def title_of(text: str, stem: str) -> str:
    """Rule 4: the front matter's title, else the first level-1 heading, else `stem`."""
    return names_of(text, stem)[0]


def names_of(text: str, stem: str) -> tuple[str, tuple[str, ...]]:
    """The note's title (Rule 4) and aliases (Rule 5), from one read of its front matter."""
    front = split_front_matter(text)
    data = front.data if front is not None and front.data is not None else {}
    title = _scalar_text(data.get("title"))
    raw_aliases = data.get("aliases")
    listed = raw_aliases if isinstance(raw_aliases, list) else [raw_aliases]
    aliases = tuple(dict.fromkeys(a for a in map(_scalar_text, listed) if a))
    return title or first_h1(text) or stem, aliases


def _scalar_text(value: Any) -> str | None:
    """A front-matter value read as a name: strings, numbers and dates as text, nothing else."""
    if isinstance(value, datetime.date):
        value = value.isoformat()
    if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value).strip():
        return str(value).strip()
    return None


def _line_count(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (not text.endswith("\n"))
