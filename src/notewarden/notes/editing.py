"""Small edits of a note's text, anchored on its content: `apply_edits(text, edits)`.

Rule 1: edits apply in order, each to the text the previous one produced, all or none: the
first that cannot apply raises `EditError` (its `index`, a stable `code`, `details`) and the
caller writes nothing. Nothing here does I/O.

Rule 2: each edit is anchored on content, never on an offset the caller remembers: `replace` on
its `old` text (exactly `expected_count` occurrences, else `match_count` with the line of each
match, or `anchor_missing` with the nearest region when there is none), section edits on a
heading (`markdown.find_heading`), front-matter edits on a key. So an edit computed from an older
read still applies when the note changed elsewhere, and refuses when its anchor changed.
`replace_section` replaces text the caller may not have seen; with `section_version` (from
`notes_read`) it refuses (`section_changed`) unless the section is still as read.

Rule 3: line endings. Lines end at LF; a note whose first line ends in CRLF is a CRLF note, and
text inserted into it has its bare LFs written as CRLF. Inserted text always forms whole lines.
A note that had no final line break still has none after an edit at its end (`_splice`).

Rule 4: a section (Rule 3 of `markdown`) is its heading, then its content: the lines up to the
next heading of the same or a higher level, without the blank lines that open and close it.
`replace_section` replaces the content (subsections included) and keeps the heading and those
blank lines; `insert` puts text `before` the heading, `after` the whole section, or at the
`start`/`end` of its content.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from notewarden.display import visible
from notewarden.notes.markdown import (
    FrontMatterEditError,
    Heading,
    HeadingLookupError,
    find_heading,
    headings,
    line_ending,
    remove_front_matter_key,
    set_front_matter_key,
    split_front_matter,
    with_line_ending,
)
from notewarden.notes.model import content_version

__all__ = [
    "Edit",
    "EditError",
    "apply_edits",
    "edit_summary",
    "find_section",
    "line_starts",
    "parse_edits",
    "section_content",
    "section_text",
    "section_version",
]

Position = Literal["before", "after", "start", "end"]
LISTED_MAX = 100
"""At most this many match lines or headings are listed in an error."""
REGION_MAX_CHARS = 1000
NEAREST_SCAN_LINES = 20_000
"""`anchor_missing` looks for the nearest region by similarity only in notes up to this long."""


@dataclass(frozen=True, slots=True)
class Edit:
    """One operation of `notes_edit` (`op` as in its input schema; unused fields stay None)."""

    op: str
    text: str | None = None
    old: str | None = None
    new: str | None = None
    expected_count: int = 1
    heading: str | None = None
    position: Position | None = None
    section_version: str | None = None
    key: str | None = None
    value: Any = None


class EditError(Exception):
    """An edit that cannot apply; nothing is written. `details` go into the tool error as they are."""

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.details = dict(details or {})
        self.index = 0

    def at(self, index: int, count: int) -> EditError:
        self.index = index
        self.details["edit"] = index
        where = f"edits[{index}]: " if count > 1 else ""
        self.args = (f"{where}{self.args[0]}; nothing was written",)
        return self


def parse_edits(raw: Sequence[Mapping[str, Any]]) -> list[Edit]:
    """`notes_edit`'s `edits` argument (already schema-valid) as `Edit`s."""
    return [
        Edit(
            op=item["op"],
            text=item.get("text"),
            old=item.get("oldText"),
            new=item.get("newText"),
            expected_count=item.get("expectedCount", 1),
            heading=item.get("heading"),
            position=item.get("position"),
            section_version=item.get("sectionVersion"),
            key=item.get("key"),
            value=item.get("value"),
        )
        for item in raw
    ]


def edit_summary(edits: Sequence[Edit]) -> str:
    """One line saying what the edits did, for the history (`append; replace_section Atlas`)."""
    parts = []
    for e in edits:
        anchor = e.heading or e.key or ""
        parts.append(f"{e.op} {anchor}".strip() if e.op != "insert" else f"insert {e.position} {anchor}")
    summary = "; ".join(parts)
    return summary if len(summary) <= 200 else summary[:199] + "…"


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """`text` with every edit applied in order (Rule 1)."""
    for index, edit in enumerate(edits):
        try:
            text = _APPLY[edit.op](text, edit)
        except EditError as exc:
            raise exc.at(index, len(edits)) from None
    return text


# Lines


def line_starts(text: str) -> list[int]:
    """Offset of each line's first character, plus len(text) as the end of the last line."""
    starts = [0]
    find = text.find
    at = find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = find("\n", at + 1)
    if starts[-1] != len(text):
        starts.append(len(text))
    return starts


def _line_count(starts: list[int]) -> int:
    return len(starts) - 1


def _splice(text: str, starts: list[int], first: int, last: int, block: str, eol: str) -> str:
    """Replace lines `first..last` (1-based, inclusive; `last = first - 1` inserts before `first`)
    with `block`, as whole lines, keeping the note's final-line-break convention (Rule 3)."""
    return _splice_at(text, starts[first - 1], starts[last], block, eol)


def _splice_at(text: str, at: int, stop: int, block: str, eol: str) -> str:
    """`_splice` by offsets: `at` and `stop` are line starts (or the end of the text)."""
    if block and not block.endswith("\n"):
        block += eol
    if stop == len(text) and text and not text.endswith("\n"):  # the edit reaches an unterminated end
        if at == len(text):
            block = eol + block
        elif not block and at:
            at -= 2 if text[at - 2 : at] == "\r\n" else 1
        block = block.removesuffix(eol) if block.endswith(eol) else block.removesuffix("\n")
    return text[:at] + block + text[stop:]


def _is_blank(text: str, starts: list[int], line: int) -> bool:
    return not text[starts[line - 1] : starts[line]].strip()


def section_content(text: str, heading: Heading, starts: list[int] | None = None) -> tuple[int, int]:
    """The 1-based first and last line of a section's content (Rule 4); last < first when empty,
    first then being where content would go. `starts`: `line_starts(text)`, when already known."""
    starts = starts or line_starts(text)
    first, last = heading.body_line, min(heading.end_line, _line_count(starts))
    leading = first
    while leading <= last and _is_blank(text, starts, leading):
        leading += 1
    if leading > last:  # only blank lines: content goes after the first of them
        spot = min(first + 1, last + 1)
        return spot, spot - 1
    while _is_blank(text, starts, last):
        last -= 1
    return leading, last


def section_text(text: str, heading: Heading, starts: list[int] | None = None) -> str:
    """A section as it is written: its heading line through its last line."""
    starts = starts or line_starts(text)
    return text[starts[heading.line - 1] : starts[min(heading.end_line, _line_count(starts))]]


def section_version(text: str, heading: Heading, starts: list[int] | None = None) -> str:
    """A digest of the section's text, like a note's version (`notes_read` shows it)."""
    return content_version(section_text(text, heading, starts).encode())


# Operations


def _append(text: str, edit: Edit) -> str:
    eol = line_ending(text)  # no line index: an append costs the same on a large note
    return _splice_at(text, len(text), len(text), with_line_ending(_given(edit.text), eol), eol)


def _prepend(text: str, edit: Edit) -> str:
    front = split_front_matter(text)
    at = front.end if front is not None else 0
    eol = line_ending(text)
    return _splice_at(text, at, at, with_line_ending(_given(edit.text), eol), eol)


def _replace(text: str, edit: Edit) -> str:
    old, new = _given(edit.old), _given(edit.new)
    eol = line_ending(text)
    count = text.count(old)
    if not count and eol == "\r\n" and with_line_ending(old, eol) != old:
        old, new = with_line_ending(old, eol), with_line_ending(new, eol)
        count = text.count(old)
    if count == edit.expected_count:
        return text.replace(old, new)
    if not count:
        details: dict[str, Any] = {"count": 0}
        nearest = _nearest_region(text, old)
        if nearest is not None:
            details["region"] = nearest
        raise EditError(
            "anchor_missing",
            "oldText is not in the note as it is now (changed since you read it, or never there)"
            + (
                f"; the nearest text is at lines {nearest['lines'][0]}-{nearest['lines'][1]}"
                if nearest
                else ""
            ),
            details,
        )
    lines = _match_lines(text, old)
    shown = ", ".join(map(str, lines[:LISTED_MAX])) + (" …" if len(lines) > LISTED_MAX else "")
    raise EditError(
        "match_count",
        f"oldText occurs {count} times (expected {edit.expected_count}), starting at lines {shown}; "
        "add surrounding text to make it unique, or set expectedCount",
        {"count": count, "expectedCount": edit.expected_count, "lines": lines[:LISTED_MAX]},
    )


def _replace_section(text: str, edit: Edit) -> str:
    heading = find_section(text, _given(edit.heading))
    if edit.section_version is not None and section_version(text, heading) != edit.section_version:
        raise _section_changed(text, heading)
    starts = line_starts(text)
    first, last = section_content(text, heading, starts)
    eol = line_ending(text)
    return _splice(text, starts, first, last, with_line_ending(_given(edit.text), eol), eol)


def _insert(text: str, edit: Edit) -> str:
    heading = find_section(text, _given(edit.heading))
    if edit.section_version is not None and section_version(text, heading) != edit.section_version:
        raise _section_changed(text, heading)
    starts = line_starts(text)
    first, last = section_content(text, heading, starts)
    line = {
        "before": heading.line,
        "after": min(heading.end_line, _line_count(starts)) + 1,
        "start": first,
        "end": last + 1,
    }[edit.position or "end"]
    eol = line_ending(text)
    return _splice(text, starts, line, line - 1, with_line_ending(_given(edit.text), eol), eol)


def _set_front_matter(text: str, edit: Edit) -> str:
    try:
        return set_front_matter_key(text, _given(edit.key), edit.value)
    except FrontMatterEditError as exc:
        raise EditError("front_matter_unusable", visible(str(exc))) from None


def _remove_front_matter(text: str, edit: Edit) -> str:
    try:
        return remove_front_matter_key(text, _given(edit.key))
    except FrontMatterEditError as exc:
        raise EditError("front_matter_unusable", visible(str(exc))) from None


_APPLY = {
    "append": _append,
    "prepend": _prepend,
    "replace": _replace,
    "replace_section": _replace_section,
    "insert": _insert,
    "set_frontmatter": _set_front_matter,
    "remove_frontmatter": _remove_front_matter,
}


# Anchors and what an error shows


def _given(value: str | None) -> str:
    if value is None:  # the input schema requires every field an op reads
        raise EditError("invalid_edit", "a required field of this edit is missing")
    return value


def find_section(text: str, query: str) -> Heading:
    """The heading `query` names (`markdown.find_heading`), else `EditError` listing the candidates."""
    found = headings(text)
    try:
        return find_heading(found, query)
    except HeadingLookupError as exc:
        listed = exc.matches or tuple(found)
        code = "heading_ambiguous" if exc.matches else "heading_not_found"
        names = "; ".join(visible(h.label) for h in listed[:LISTED_MAX]) or "the note has no headings"
        what = "matches" if exc.matches else "headings"
        raise EditError(
            code,
            f"{visible(str(exc))}; {what}: {names}. Name it by its path (Parent > Heading) or with its "
            "level (## Heading)",
            {
                "headings": [
                    {"line": h.line, "level": h.level, "heading": h.text, "path": " > ".join(h.path)}
                    for h in listed[:LISTED_MAX]
                ]
            },
        ) from None


def _section_changed(text: str, heading: Heading) -> EditError:
    starts = line_starts(text)
    last = min(heading.end_line, _line_count(starts))
    return EditError(
        "section_changed",
        f"section {visible(heading.text)!r} (lines {heading.line}-{last}) changed since you read it",
        {"region": _region(text, starts, heading.line, last)},
    )


def _region(text: str, starts: list[int], first: int, last: int) -> dict[str, Any]:
    body = text[starts[first - 1] : starts[last]]
    region: dict[str, Any] = {"lines": [first, last], "text": body[:REGION_MAX_CHARS]}
    if len(body) > REGION_MAX_CHARS:
        region["truncated"] = True
    return region


def _match_lines(text: str, old: str) -> list[int]:
    lines, line, scanned = [], 1, 0
    at = text.find(old)
    while at >= 0:
        line += text.count("\n", scanned, at)
        scanned = at
        lines.append(line)
        at = text.find(old, at + len(old))
    return lines


def _nearest_region(text: str, old: str) -> dict[str, Any] | None:
    """Where `old` most likely was: the lines most like its longest line (difflib), as long as it
    spans; None when nothing is similar enough or the note is too long to compare line by line."""
    wanted = [line.strip() for line in old.removesuffix("\n").split("\n")]
    probe = max(wanted, key=len)
    starts = line_starts(text)
    total = _line_count(starts)
    if not probe or total > NEAREST_SCAN_LINES:
        return None
    lines = [text[starts[i] : starts[i + 1]].strip() for i in range(total)]
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(probe)
    best, best_line = 0.6, None
    for number, line in enumerate(lines, 1):
        matcher.set_seq1(line)
        if matcher.real_quick_ratio() > best and matcher.quick_ratio() > best:
            ratio = matcher.ratio()
            if ratio > best:
                best, best_line = ratio, number
    if best_line is None:
        return None
    first = max(1, best_line - wanted.index(probe))
    return _region(text, starts, first, min(total, first + len(wanted) - 1))
