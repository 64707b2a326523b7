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

Parsing costs about a microsecond per line; `first_h1` parses only up to the first line that
could be a level-1 heading, which is where a title almost always is.

Obsidian's vault syntax (`parse_note`), found only where CommonMark reads inline text (paragraphs
and headings: never in fenced or indented code, HTML blocks, front matter or code spans, and never
after a backslash escape):

Rule 7: properties are the front matter's mapping made JSON-safe (`json_value`). `tags` (or `tag`)
is a list, or a string of tags separated by commas or blanks; `aliases` (or `alias`) is a list, or
one alias as a string (`aliases_of`). A leading `#` on a front-matter tag is dropped.

Rule 8: an inline tag is `#` at the start of a line or after a blank, then letters, digits, `_`,
`-` and `/` (nested tags: `#area/sub`), with at least one character that is not a digit (`#1984`
is not a tag). So heading markers (`## x`), URL fragments (`page#part`) and `a#b` are not tags;
a `#tag` written inside a heading's text is one. Tags compare case-insensitively (`tag_key`).

Rule 9: links, each with its line and exact source spans (what a rewrite replaces):
`[[path#anchor|display]]` (a wiki link: one line; an escaped bar separates inside tables), `![[...]]` (an
embed), `[text](dest)` and `![alt](dest)` (Markdown: the destination as CommonMark parses it,
`<...>` or bare, percent-decoded; a destination with a URL scheme or `//` is external and not a
link between notes). The anchor is what follows the first `#`: heading texts separated by `#`,
or `^block-id`. An empty path (`[[#Heading]]`) names the note itself.

A wiki link inside the front matter (`owner: "[[Ana Souza]]"`) is a link too, as in Obsidian's
properties.

Rule 10: a block id is `^id` (Latin letters, digits, `-`) at the end of a line, after a blank or
alone on its line.
"""

from __future__ import annotations

import bisect
import datetime
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote

import yaml
from markdown_it import MarkdownIt
from markdown_it.helpers import parseLinkDestination, parseLinkTitle
from markdown_it.token import Token

__all__ = [
    "FRONT_MATTER_MAX_BYTES",
    "BlockId",
    "FrontMatter",
    "FrontMatterEditError",
    "Heading",
    "HeadingLookupError",
    "Link",
    "NoteFacts",
    "Tag",
    "aliases_of",
    "find_heading",
    "first_h1",
    "fold",
    "headings",
    "json_value",
    "line_ending",
    "parse_note",
    "remove_front_matter_key",
    "set_front_matter_key",
    "split_front_matter",
    "tag_key",
    "tags_of",
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
    # CommonMark also ends a line at a lone CR; lines here end at LF only, so a lone CR is read as
    # a space (same length), keeping markdown-it's line numbers equal to ours.
    return _headings(_parse_blocks(body), offset, offset + _line_count(body))


def _parse_blocks(body: str) -> list[Token]:
    return _PARSER.parse(_LONE_CR.sub(" ", body) if "\r" in body else body)


def _headings(tokens: Sequence[Token], offset: int, total: int) -> list[Heading]:
    found: list[tuple[int, str, int, int]] = []
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
    return _first_h1(_body(text)[0])


def _first_h1(body: str) -> str | None:
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
    front = split_front_matter(text)
    if front is not None and front.data is not None:
        title = front.data.get("title")
        if isinstance(title, datetime.date):
            title = title.isoformat()
        if isinstance(title, str | int | float) and not isinstance(title, bool) and str(title).strip():
            return str(title).strip()
    return first_h1(text) or stem


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


# Obsidian's vault syntax (Rules 7-10)

LinkStyle = Literal["wiki", "markdown"]


@dataclass(frozen=True, slots=True)
class Link:
    """One link as written. Spans are [start, end) offsets into the note's text."""

    style: LinkStyle
    embed: bool
    path: str
    """The target as written, percent-decoded for Markdown links, without the anchor ('' = this note)."""
    anchor: str
    """What follows the first `#`: `Heading`, `H1#H2` or `^block-id`; '' when there is none."""
    display: str | None
    line: int
    span: tuple[int, int]
    path_span: tuple[int, int]
    """The path part exactly as written (percent-encoded, inside `<...>`, ...): what a move replaces."""


@dataclass(frozen=True, slots=True)
class Tag:
    name: str
    """As written, without `#`."""
    line: int
    """0 for a front-matter tag."""


@dataclass(frozen=True, slots=True)
class BlockId:
    id: str
    line: int


@dataclass(frozen=True, slots=True)
class NoteFacts:
    """What a note says about itself and the vault (Rules 1-10)."""

    title: str
    properties: dict[str, Any] | None
    """The front matter as JSON (None when there is none or it is malformed: see `property_error`)."""
    property_error: str | None
    tags: tuple[Tag, ...]
    aliases: tuple[str, ...]
    links: tuple[Link, ...]
    block_ids: tuple[BlockId, ...]
    headings: tuple[Heading, ...] = field(default=())


def fold(text: str) -> str:
    """The form names compare in: NFC, case-folded (so `Café` written either way matches)."""
    return text.casefold() if text.isascii() else unicodedata.normalize("NFC", text).casefold()


def tag_key(name: str) -> str:
    return fold(name)


_TAG_CHARS = re.compile(r"[\w/-]+")
_TAG_SPLIT = re.compile(r"[\s,]+")
_BLOCK_ID = re.compile(r"[A-Za-z0-9-]+")
_INLINE_MARK = re.compile(r"[\\`\[#^]")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:|//")
_SKIPPED_BLOCKS = frozenset({"fence", "code_block", "html_block"})


def _valid_tag(name: str) -> str | None:
    name = name.rstrip("/")
    if not name or _TAG_CHARS.fullmatch(name) is None or name.replace("/", "").isdigit():
        return None
    return name


def tags_of(properties: dict[str, Any] | None) -> list[str]:
    """Rule 7: the front matter's `tags` (or `tag`), a list or a string of tags."""
    if not properties:
        return []
    value = properties.get("tags", properties.get("tag"))
    items = _TAG_SPLIT.split(value) if isinstance(value, str) else value if isinstance(value, list) else []
    tags = (_valid_tag(str(item).strip().lstrip("#")) for item in items if item is not None)
    return [t for t in tags if t]


def aliases_of(properties: dict[str, Any] | None) -> list[str]:
    """Rule 7: the front matter's `aliases` (or `alias`): a list, or one alias as a string."""
    if not properties:
        return []
    value = properties.get("aliases", properties.get("alias"))
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    aliases = (str(item).strip() for item in items if isinstance(item, str | int | float))
    return [a for a in aliases if a]


def parse_note(text: str, stem: str, *, with_headings: bool = True) -> NoteFacts:
    """Everything the files index keeps about a note, in one pass over it (`notes.index_refresh` Rules 1-8).

    A note costs one block parse. Without `with_headings` (the index: it reads a link target's
    headings only when a link's anchor is shown) the block parse is skipped when nothing could open
    a code block, an HTML block or a code span (`_BLOCK_SYNTAX`): then every paragraph is inline text
    and is scanned as it stands, and only the head is parsed for the title."""
    body, offset, front = _body(text)
    properties: dict[str, Any] | None = None
    error = front.error if front is not None else None
    if front is not None and front.data is not None:
        try:
            properties = json_value(front.data)
        except ValueError as exc:
            error = str(exc)
    scan = _Scan(text)
    if front is not None and "[[" in front.raw:
        scan.region(text.index("\n") + 1, front.end, properties_only=True)
    found_headings: list[Heading] = []
    marks = "[" in body or "#" in body or "^" in body
    body_start = len(text) - len(body)
    if not with_headings and (not marks or _BLOCK_SYNTAX.search(body) is None):
        start = body_start
        for blank in _BLANK_LINE.finditer(text, body_start) if marks else ():
            scan.region(start, blank.start())
            start = blank.end()
        if marks:
            scan.region(start, len(text))
        title = _title(properties, [], stem) if _has_title(properties) else _first_h1(body) or stem
    else:
        if marks or "=" in body or "-" in body:
            tokens = _parse_blocks(body)
            found_headings = _headings(tokens, offset, offset + _line_count(body))
            body_lines = _line_starts(body) if marks else []
            for token in tokens if marks else ():
                if token.type == "inline" and token.map is not None:
                    first, last = token.map
                    end = body_start + (body_lines[last] if last < len(body_lines) else len(body))
                    scan.region(body_start + body_lines[first], end)
        title = _title(properties, found_headings, stem)
    front_tags = [Tag(t, 0) for t in tags_of(properties)]
    return NoteFacts(
        title=title,
        properties=properties,
        property_error=error,
        tags=tuple(front_tags + scan.tags),
        aliases=tuple(aliases_of(properties)),
        links=tuple(scan.links),
        block_ids=tuple(scan.block_ids),
        headings=tuple(found_headings),
    )


_BLOCK_SYNTAX = re.compile(r"`|~~~|^(?: {0,3}<| {4}|\t)", re.MULTILINE)
"""What could open a code span, a fenced or indented code block, or an HTML block (CommonMark)."""
_BLANK_LINE = re.compile(r"\n[ \t]*(?=\n)")


def _has_title(properties: dict[str, Any] | None) -> bool:
    title = properties.get("title") if properties else None
    return isinstance(title, str | int | float) and not isinstance(title, bool) and bool(str(title).strip())


def _title(properties: dict[str, Any] | None, found: list[Heading], stem: str) -> str:
    """Rule 4 from what `parse_note` already parsed (`title_of` reads only the note's head)."""
    if properties is not None and _has_title(properties):
        return str(properties["title"]).strip()
    return next((h.text for h in found if h.level == 1 and h.text), stem)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    find = text.find
    pos = find("\n")
    while pos >= 0:
        starts.append(pos + 1)
        pos = find("\n", pos + 1)
    return starts


class _Scan:
    """Rules 8-10 over the inline regions of one note; offsets are into the whole text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.links: list[Link] = []
        self.tags: list[Tag] = []
        self.block_ids: list[BlockId] = []
        self._starts: list[int] | None = None

    def line(self, offset: int) -> int:
        if self._starts is None:
            self._starts = _line_starts(self.text)
        return bisect.bisect_right(self._starts, offset)

    def region(self, start: int, end: int, *, properties_only: bool = False) -> None:
        """Scan [start, end); `properties_only`: front matter, where only wiki links count."""
        text = self.text
        pos = start
        while (mark := _INLINE_MARK.search(text, pos, end)) is not None:
            at = mark.start()
            char = text[at]
            if char == "[":
                embed = at > start and text[at - 1] == "!" and text[at - 2 : at - 1] != "\\"
                link_start = at - embed
                if properties_only:
                    pos = self._wiki(link_start, at, False, end) if text.startswith("[[", at) else at + 1
                else:
                    pos = self._link(link_start, embed, end)
            elif properties_only:
                pos = at + 1
            elif char == "\\":
                pos = at + 2
            elif char == "`":
                run = at + 1
                while run < end and text[run] == "`":
                    run += 1
                pos = _code_span_end(text, run, end, run - at) or run
            elif char == "#":
                pos = self._tag(at, end)
            else:
                pos = self._block_id(at, end)

    def _tag(self, at: int, end: int) -> int:
        text = self.text
        if at > 0 and not text[at - 1].isspace():
            return at + 1
        chars = _TAG_CHARS.match(text, at + 1, end)
        name = _valid_tag(chars.group()) if chars else None
        if chars is None or name is None:
            return at + 1
        self.tags.append(Tag(name, self.line(at)))
        return chars.end()

    def _block_id(self, at: int, end: int) -> int:
        text = self.text
        if at > 0 and text[at - 1] not in " \t\n":
            return at + 1
        found = _BLOCK_ID.match(text, at + 1, end)
        if found is None:
            return at + 1
        rest = found.end()
        while rest < end and text[rest] in " \t\r":
            rest += 1
        if rest < end and text[rest] != "\n":
            return at + 1
        self.block_ids.append(BlockId(found.group(), self.line(at)))
        return found.end()

    def _link(self, at: int, embed: bool, end: int) -> int:
        text = self.text
        bracket = at + 1 if embed else at
        if text.startswith("[[", bracket):
            return self._wiki(at, bracket, embed, end)
        label_end = _label_end(text, bracket, end)
        if label_end is None or not text.startswith("(", label_end + 1):
            return bracket + 1
        link = self._markdown(at, bracket, label_end, embed, end)
        if link is None:
            return bracket + 1
        if link.path or link.anchor:
            self.links.append(link)
        return link.span[1]

    def _wiki(self, at: int, bracket: int, embed: bool, end: int) -> int:
        text = self.text
        inner_start = bracket + 2
        line_end = text.find("\n", inner_start, end)
        close = text.find("]]", inner_start, end if line_end < 0 else line_end)
        if close <= inner_start or "[[" in text[inner_start:close]:
            return inner_start
        inner = text[inner_start:close]
        bar = inner.find("|")
        target, display = inner, None
        if bar >= 0:
            cut = bar - 1 if bar > 0 and inner[bar - 1] == "\\" else bar
            target, display = inner[:cut], inner[bar + 1 :]
        hash_at = target.find("#")
        raw_path = target if hash_at < 0 else target[:hash_at]
        anchor = "" if hash_at < 0 else target[hash_at + 1 :]
        lead = len(raw_path) - len(raw_path.lstrip())
        path = raw_path.strip()
        path_start = inner_start + lead
        self.links.append(
            Link(
                style="wiki",
                embed=embed,
                path=path,
                anchor=anchor.strip(),
                display=display,
                line=self.line(at),
                span=(at, close + 2),
                path_span=(path_start, path_start + len(path)),
            )
        )
        return close + 2

    def _markdown(self, at: int, bracket: int, label_end: int, embed: bool, end: int) -> Link | None:
        text = self.text
        pos = _skip_blanks(text, label_end + 2, end)
        dest = parseLinkDestination(text, pos, end)
        if not dest.ok:
            return None
        dest_start, dest_end = pos, dest.pos
        pos = _skip_blanks(text, dest_end, end)
        if pos < end and text[pos] in "\"'(" and pos > dest_end:
            title = parseLinkTitle(text, pos, end)
            if title.ok:
                pos = _skip_blanks(text, title.pos, end)
        if pos >= end or text[pos] != ")":
            return None
        raw = dest.str
        if _SCHEME.match(raw):
            return Link("markdown", embed, "", "", None, 0, (at, pos + 1), (0, 0))  # external: dropped
        inner_start = dest_start + 1 if text.startswith("<", dest_start) else dest_start
        written = text[inner_start : dest_end - (inner_start != dest_start)]
        hash_at = written.find("#")
        written_path = written if hash_at < 0 else written[:hash_at]
        hash_raw = raw.find("#")
        return Link(
            style="markdown",
            embed=embed,
            path=unquote(raw if hash_raw < 0 else raw[:hash_raw]),
            anchor="" if hash_raw < 0 else unquote(raw[hash_raw + 1 :]),
            display=text[bracket + 1 : label_end],
            line=self.line(at),
            span=(at, pos + 1),
            path_span=(inner_start, inner_start + len(written_path)),
        )


def _skip_blanks(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _code_span_end(text: str, pos: int, end: int, ticks: int) -> int | None:
    """Where the code span opened by `ticks` backticks ends, or None (then they are literal)."""
    while (close := text.find("`" * ticks, pos, end)) >= 0:
        run_end = close
        while run_end < end and text[run_end] == "`":
            run_end += 1
        if run_end - close == ticks:
            return run_end
        pos = run_end
    return None


def _label_end(text: str, bracket: int, end: int) -> int | None:
    """The `]` closing the link text opened at `bracket` (balanced, escapes and code spans skipped)."""
    depth, pos = 0, bracket
    while pos < end:
        char = text[pos]
        if char == "\\":
            pos += 2
            continue
        if char == "`":
            run = pos
            while run < end and text[run] == "`":
                run += 1
            pos = _code_span_end(text, run, end, run - pos) or run
            continue
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return pos
        pos += 1
    return None
