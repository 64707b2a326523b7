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

Rule 5: a heading is addressed by its text or by a path of texts (`Projects > Atlas`, the last
components of its `path`), optionally with its ATX marks (`## Atlas`): exact text first, then
case-insensitively; more than one match is ambiguous, never a guess (`find_heading`).

Rule 6: a front-matter field is edited key by key (`set_front_matter_key`,
`remove_front_matter_key`): PyYAML's composer gives the exact span of the key's entry, only that
span is rewritten (the new entry dumped by PyYAML), and the result is read back: the edited key
must hold the new value and every other key its old one, or the edit is refused. So comments,
quoting, key order and spacing of the rest of the block stay as they were, byte for byte.

Rule 7: a note's aliases (Obsidian's other names for it) are the front matter's `aliases`: a list
of strings, or one string; numbers and dates count as their text, anything else is ignored.

Parsing costs about a microsecond per line; `first_h1` parses only up to the first line that
could be a level-1 heading, which is where a title almost always is.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from markdown_it import MarkdownIt

__all__ = [
    "FRONT_MATTER_MAX_BYTES",
    "FrontMatter",
    "FrontMatterEditError",
    "Heading",
    "HeadingLookupError",
    "find_heading",
    "first_h1",
    "headings",
    "json_value",
    "line_ending",
    "names_of",
    "remove_front_matter_key",
    "set_front_matter_key",
    "split_front_matter",
    "title_of",
    "with_line_ending",
]

FRONT_MATTER_MAX_BYTES = 64 * 1024
"""A longer block is reported as an error and not parsed (YAML is not a format for megabytes)."""
JSON_NODES_MAX = 10_000
"""The most values `json_value` produces: YAML aliases can make a small block a huge tree."""

_FENCE = re.compile(r"(?:---|\.\.\.)[ \t]*")
_LONE_CR = re.compile(r"\r(?!\n)")
_ALIAS_VALUE = re.compile(r"[ \t]*:[ \t]*\*[^\s,\]}]+")
_ATX_MARKS = re.compile(r"(#{1,6})[ \t]+(?=\S)")
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
    body_line: int
    """1-based first line after the heading itself (after a setext heading's underline)."""

    @property
    def label(self) -> str:
        """How a person reads it in a list: `L12 ## Atlas`."""
        return f"L{self.line} {'#' * self.level} {self.text}"


class HeadingLookupError(LookupError):
    """No heading, or more than one, answers to a query (Rule 5); `matches` are the ambiguous ones."""

    def __init__(self, query: str, matches: Sequence[Heading]) -> None:
        what = "matches more than one heading" if matches else "matches no heading"
        super().__init__(f"heading {query!r} {what}")
        self.query = query
        self.matches = tuple(matches)


class FrontMatterEditError(ValueError):
    """The front matter cannot be edited key by key (Rule 6); the message says why."""


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
    found: list[tuple[int, str, int, int]] = []
    # CommonMark also ends a line at a lone CR; lines here end at LF only, so a lone CR is read as
    # a space (same length), keeping markdown-it's line numbers equal to ours.
    tokens = _PARSER.parse(_LONE_CR.sub(" ", body) if "\r" in body else body)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0 and token.map is not None:
            start, stop = token.map
            found.append(
                (int(token.tag[1]), tokens[i + 1].content.strip(), start + offset + 1, stop + offset + 1)
            )
    result: list[Heading] = []
    stack: list[tuple[int, str]] = []
    for n, (level, title, line, body_line) in enumerate(found):
        end = total
        for later_level, _, later_line, _ in found[n + 1 :]:
            if later_level <= level:
                end = later_line - 1
                break
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        result.append(Heading(level, title, line, end, tuple(t for _, t in stack), body_line))
    return result


def find_heading(found: Sequence[Heading], query: str) -> Heading:
    """The one heading `query` names (Rule 5), else `HeadingLookupError`."""
    wanted = query.strip()
    level = None
    marks = _ATX_MARKS.match(wanted)
    if marks:
        level, wanted = len(marks.group(1)), wanted[marks.end() :]
    readings: list[tuple[str, ...]] = [(wanted,)]
    if ">" in wanted:
        readings.append(tuple(part.strip() for part in wanted.split(">")))
    for fold in (False, True):
        for parts in readings:
            norm = tuple(p.casefold() for p in parts) if fold else parts
            matches = [
                h
                for h in found
                if (level is None or h.level == level)
                and len(h.path) >= len(norm)
                and tuple(p.casefold() if fold else p for p in h.path[len(h.path) - len(norm) :]) == norm
            ]
            if len(matches) == 1:
                return matches[0]
            if matches:
                raise HeadingLookupError(query, matches)
    raise HeadingLookupError(query, ())


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
    """The note's title (Rule 4) and aliases (Rule 7), from one read of its front matter."""
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


def line_ending(text: str) -> str:
    """The note's line ending: CRLF when its first line ends so, else LF."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def with_line_ending(text: str, eol: str) -> str:
    """`text` with its bare LFs written as `eol`."""
    return re.sub(r"(?<!\r)\n", "\r\n", text) if eol == "\r\n" else text


def set_front_matter_key(text: str, key: str, value: Any) -> str:
    """`text` with the front matter's top-level `key` set to `value` (JSON data), the block or the
    key added where missing (Rule 6). `FrontMatterEditError` when that cannot be done exactly."""
    eol = line_ending(text)
    front = split_front_matter(text)
    if front is None:
        return with_line_ending("---\n" + _dump_entry(key, value, flow=False) + "---\n", eol) + text
    entries, column = _entries(front)
    found = _entry(entries, key)
    raw = front.raw
    if found is None:
        addition = _indented(with_line_ending(_dump_entry(key, value, flow=False), eol), column)
        new_raw = raw + ("" if not raw or raw.endswith("\n") else eol) + addition
    else:
        start, stop, comment, flow = found
        entry = _indented(with_line_ending(_dump_entry(key, value, flow=flow), eol), column)
        if comment:
            entry = entry[: -len(eol)] + comment + eol
        new_raw = raw[:start] + entry + raw[stop:]
    return _replace_raw(text, front, new_raw, key, value)


def remove_front_matter_key(text: str, key: str) -> str:
    """`text` without the front matter's top-level `key`: its whole entry, lines and all (Rule 6)."""
    front = split_front_matter(text)
    if front is None:
        raise FrontMatterEditError(f"the note has no front matter, so no key {key!r}")
    entries, _ = _entries(front)
    found = _entry(entries, key)
    if found is None:
        keys = ", ".join(repr(k) for k, *_ in entries) or "none"
        raise FrontMatterEditError(f"the front matter has no key {key!r}; its keys: {keys}")
    start, stop, _, _ = found
    return _replace_raw(text, front, front.raw[:start] + front.raw[stop:], key, _REMOVED)


_REMOVED = object()
_Entry = tuple[str, int, int, str, bool]
"""(key, start, stop, comment kept on a rewrite, value written in flow style)"""


def _entries(front: FrontMatter) -> tuple[list[_Entry], int]:
    """Every top-level entry of a block mapping with its span in `front.raw`, and the mapping's column."""
    if front.error is not None:
        raise FrontMatterEditError(f"{front.error}; fix it first (notes_update)")
    raw = front.raw
    try:
        node = yaml.compose(raw, Loader=yaml.SafeLoader)  # the pure-Python loader: marks are offsets
    except yaml.YAMLError as exc:
        raise FrontMatterEditError(f"front matter is not valid YAML: {exc}") from None
    if node is None:
        return [], 0
    if not isinstance(node, yaml.MappingNode) or node.flow_style:
        raise FrontMatterEditError(
            "front matter is not a block mapping (one `key: value` per line); edit it with notes_update"
        )
    entries: list[_Entry] = []
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            continue
        begin = key_node.start_mark.index
        start = raw.rfind("\n", 0, begin) + 1
        if value_node.start_mark.index < begin:  # an alias: the node is the anchor's, written earlier
            alias = _ALIAS_VALUE.match(raw, key_node.end_mark.index)
            line_end = raw.find("\n", begin)
            end = alias.end() if alias else len(raw) if line_end < 0 else line_end
        else:
            end = _last_char(value_node)
        if end == 0 or raw[end - 1] == "\n":
            stop, rest = end, ""
        else:
            line_end = raw.find("\n", end)
            stop = len(raw) if line_end < 0 else line_end + 1
            rest = raw[end : len(raw) if line_end < 0 else line_end].rstrip("\r")
        comment = rest if rest.lstrip().startswith("#") and rest[:1].isspace() else ""
        flow = isinstance(value_node, yaml.CollectionNode) and bool(value_node.flow_style)
        entries.append((str(key_node.value), start, stop, comment, flow))
    return entries, node.start_mark.column


def _last_char(node: yaml.Node) -> int:
    """Where the text of a value ends: its last scalar, not the next key (a block collection's own
    end mark lies past trailing comments and blank lines)."""
    if isinstance(node, yaml.CollectionNode) and not node.flow_style:
        children: list[yaml.Node] = []
        for child in node.value:
            children.extend(child if isinstance(child, tuple) else (child,))
        ends = [_last_char(c) for c in children if c.start_mark.index >= node.start_mark.index]
        return max([node.start_mark.index, *ends])
    return int(node.end_mark.index)


def _entry(entries: list[_Entry], key: str) -> tuple[int, int, str, bool] | None:
    spans = [(start, stop, comment, flow) for k, start, stop, comment, flow in entries if k == key]
    if len(spans) > 1:
        raise FrontMatterEditError(f"the front matter has the key {key!r} {len(spans)} times; fix it first")
    return spans[0] if spans else None


def _dump_entry(key: str, value: Any, *, flow: bool) -> str:
    return str(
        yaml.safe_dump(
            {key: value},
            allow_unicode=True,
            sort_keys=False,
            default_flow_style=None if flow else False,
            width=1 << 30,
        )
    )


def _indented(entry: str, column: int) -> str:
    if not column:
        return entry
    return "".join(" " * column + line for line in entry.splitlines(keepends=True))


def _replace_raw(text: str, front: FrontMatter, new_raw: str, key: str, value: Any) -> str:
    """`text` with the block's content replaced, after checking the new block reads as intended."""
    data, error = _load(new_raw)
    if error is not None or data is None or front.data is None:
        raise FrontMatterEditError(
            f"the edited front matter would not read back ({error}); nothing was changed"
        )
    try:
        before, after = json_value(front.data), json_value(data)
        wanted = json_value(value) if value is not _REMOVED else _REMOVED
    except ValueError as exc:
        raise FrontMatterEditError(str(exc)) from None
    expected = {k: v for k, v in before.items() if k != key}
    if wanted is not _REMOVED:
        expected[key] = wanted
    if after != expected:
        raise FrontMatterEditError(
            f"editing {key!r} key by key would change other keys (anchors, aliases or merge keys?); "
            "edit the front matter with notes_update"
        )
    start = text.index("\n") + 1
    return text[:start] + new_raw + text[start + len(front.raw) :]
