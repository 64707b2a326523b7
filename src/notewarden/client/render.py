"""Tool results rendered for a person reading a terminal (`notewarden client`; `--json` shows them raw).

Rules:
1. A result is shown by its shape, in this order (`RENDERERS`, the first that fits): a search
   as a ranked list (title, path, the snippet with its matched words highlighted); a note's text
   as rendered Markdown (its front matter as `key: value` lines, then headings, emphasis, lists,
   quotes and code drawn by a small renderer on markdown-it-py, which notewarden already uses to
   read notes); a diff coloured (+ green, - red, @@ cyan); any list of records (notes, trash,
   history, tags, backlinks) as a table; whatever else as indented `key: value` lines. Never JSON.
2. Every text from the server goes through `display.visible` (`visible_line` for a table cell or a
   title) *before* any colour is added, so a note cannot send escape sequences of its own.
3. Colour only on a terminal, and never with NO_COLOR set (no-color.org): `Style(enabled=False)`
   draws the same layout without escapes (a highlighted word is then shown between « »).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from notewarden.display import visible, visible_line

__all__ = ["Style", "render_result", "style_for"]

_MATCHED = re.compile(r"\*\*(.+?)\*\*")
_CELL_MAX = 48


@dataclass(frozen=True)
class Style:
    enabled: bool

    def _sgr(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text

    def bold(self, text: str) -> str:
        return self._sgr("1", text)

    def dim(self, text: str) -> str:
        return self._sgr("2", text)

    def italic(self, text: str) -> str:
        return self._sgr("3", text)

    def code(self, text: str) -> str:
        return self._sgr("36", text)

    def added(self, text: str) -> str:
        return self._sgr("32", text)

    def removed(self, text: str) -> str:
        return self._sgr("31", text)

    def hunk(self, text: str) -> str:
        return self._sgr("36", text)

    def match(self, text: str) -> str:
        return self._sgr("1;33", text) if self.enabled else f"«{text}»"


def style_for(out: TextIO) -> Style:
    """Rule 3."""
    return Style(enabled=out.isatty() and not os.environ.get("NO_COLOR"))


# --- Markdown -------------------------------------------------------------------------------------

_PARSER = MarkdownIt("commonmark")


def _front_matter(text: str) -> tuple[list[str], str]:
    """(`key: value` lines, body) of a note that opens with a YAML front matter block."""
    if not text.startswith("---\n"):
        return [], text
    end = text.find("\n---\n", 4)
    if end < 0:
        return [], text
    try:
        fields = yaml.safe_load(text[4:end])
    except yaml.YAMLError:
        fields = None
    if not isinstance(fields, dict):
        return [visible(line) for line in text[4:end].splitlines()], text[end + 5 :]
    lines = []
    for key, value in fields.items():
        shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        lines.append(f"{visible_line(str(key))}: {visible_line(shown)}")
    return lines, text[end + 5 :]


def _inline(token: Token, style: Style) -> str:
    parts: list[str] = []
    marks: list[tuple[str, int]] = []  # (kind, index in parts where it started)
    links: list[str] = []
    for child in token.children or []:
        kind = child.type
        if kind == "text":
            parts.append(visible(child.content))
        elif kind == "code_inline":
            parts.append(style.code(visible(child.content)))
        elif kind in ("softbreak", "hardbreak"):
            parts.append(" " if kind == "softbreak" else "\n")
        elif kind in ("strong_open", "em_open"):
            marks.append((kind, len(parts)))
        elif kind in ("strong_close", "em_close") and marks:
            _, start = marks.pop()
            inner = "".join(parts[start:])
            del parts[start:]
            parts.append(style.bold(inner) if kind == "strong_close" else style.italic(inner))
        elif kind == "link_open":
            links.append(str(child.attrs.get("href", "")))
        elif kind == "link_close" and links:
            parts.append(style.dim(f" <{visible_line(links.pop())}>"))
        elif kind == "image":
            parts.append(f"[image: {visible_line(child.content)}]")
    return "".join(parts)


def render_markdown(text: str, style: Style) -> list[str]:
    """Rule 1: a note as a person reads it in a terminal."""
    front, body = _front_matter(text)
    lines = [style.dim(f"│ {line}") for line in front]
    if front:
        lines.append("")
    lists: list[list[int]] = []  # per open list: [next number, or 0 for bullets]
    quote = 0
    item_prefix = ""
    for token in _PARSER.parse(body):
        kind = token.type
        indent = "  " * max(0, len(lists) - 1) + "│ " * quote
        if kind == "heading_open":
            level = int(token.tag[1])
            item_prefix = "#" * level + " "
        elif kind == "inline":
            content = _inline(token, style)
            if item_prefix.startswith("#"):
                lines.append(indent + style.bold(item_prefix + content))
                item_prefix = ""
            else:
                for i, line in enumerate(content.split("\n")):
                    lines.append(indent + (item_prefix if i == 0 else " " * len(item_prefix)) + line)
                item_prefix = ""
        elif kind in ("bullet_list_open", "ordered_list_open"):
            lists.append([int(token.attrs.get("start", 1) or 1) if kind == "ordered_list_open" else 0])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
            if not lists:
                lines.append("")
        elif kind == "list_item_open" and lists:
            number = lists[-1][0]
            item_prefix = f"{number}. " if number else "• "
            if number:
                lists[-1][0] += 1
        elif kind == "paragraph_close" and not lists:
            lines.append("")
        elif kind in ("fence", "code_block"):
            lines += [
                indent + "    " + style.code(visible(line)) for line in token.content.rstrip("\n").split("\n")
            ]
            lines.append("")
        elif kind == "blockquote_open":
            quote += 1
        elif kind == "blockquote_close":
            quote -= 1
        elif kind == "hr":
            lines += [indent + style.dim("─" * 20), ""]
        elif kind == "html_block":
            lines += [indent + visible(line) for line in token.content.rstrip("\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


# --- shapes ---------------------------------------------------------------------------------------


def render_diff(diff: str, style: Style) -> list[str]:
    painted = {"+": style.added, "-": style.removed, "@": style.hunk}
    return [painted.get(line[:1], str)(visible(line)) for line in diff.rstrip("\n").split("\n")]


def _cell(value: Any) -> str:
    if isinstance(value, list):
        value = ", ".join(map(str, value))
    elif isinstance(value, dict):
        value = ", ".join(f"{k}={v}" for k, v in value.items() if not isinstance(v, dict | list))
    text = visible_line("" if value is None else str(value))
    return text if len(text) <= _CELL_MAX else text[: _CELL_MAX - 1] + "…"


def render_table(rows: Sequence[Mapping[str, Any]], style: Style) -> list[str]:
    """Columns are the keys of the rows (their first appearance), each as wide as its widest cell."""
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns and k != "uri" and not k.endswith("Uri")]
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    head = "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()
    body = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return [style.bold(head), *body]


def _scalars(content: Mapping[str, Any], skip: set[str]) -> list[str]:
    return [
        f"{visible_line(k)}: {_cell(v)}"
        for k, v in content.items()
        if k not in skip and not isinstance(v, dict | list)
    ]


def _search(content: Mapping[str, Any], style: Style) -> list[str] | None:
    hits = content.get("results")
    if not isinstance(hits, list) or "query" not in content:
        return None
    lines = [style.dim(f"{len(hits)} note(s) for “{visible_line(str(content['query']))}”, best first")]
    for rank, hit in enumerate(hits, 1):
        lines.append(
            f"{rank:>2}. {style.bold(visible_line(str(hit.get('title', ''))))}  {style.dim(visible_line(str(hit.get('id', ''))))}"
        )
        snippet = visible_line(str(hit.get("snippet", "")))
        if snippet:
            lines.append("    " + _MATCHED.sub(lambda m: style.match(m.group(1)), snippet))
    if content.get("nextCursor"):
        lines.append(
            style.dim("more: call it again with this cursor: " + visible_line(str(content["nextCursor"])))
        )
    return lines


def _note(content: Mapping[str, Any], style: Style) -> list[str] | None:
    body, note = content.get("body"), content.get("note")
    if not isinstance(body, str) or not isinstance(note, dict):
        return None
    head = f"{style.bold(visible_line(str(note.get('title', ''))))}  {style.dim(visible_line(str(note.get('id', ''))))}"
    lines = [head, style.dim(f"{note.get('size', '?')} bytes, modified {note.get('modified', '?')}"), ""]
    lines += render_markdown(body, style)
    if content.get("truncated"):
        lines.append(style.dim(f"(the note goes on: {content.get('totalLines')} lines in all)"))
    return lines


def _diff(content: Mapping[str, Any], style: Style) -> list[str] | None:
    diff = content.get("diff")
    if not isinstance(diff, str):
        return None
    note = content.get("noteId") or (content.get("note") or {}).get("id", "")
    before, after = content.get("before") or {}, content.get("after") or {}
    sizes = f" ({before.get('size')} → {after.get('size')} bytes)" if before and after else ""
    dry = " (dry run: nothing was written)" if content.get("dryRun") else ""
    lines = [style.bold(f"{visible_line(str(note))}{sizes}{dry}")] if note else []
    lines += render_diff(diff, style) if diff else [style.dim("(no change)")]
    if content.get("previousVersionId"):
        lines.append(style.dim(f"the version before is kept: {content['previousVersionId']} (notes_revert)"))
    return lines


def _notes(content: Mapping[str, Any], style: Style) -> list[str] | None:
    """Several notes read at once (notes_read_many): each drawn as `_note` draws one."""
    notes = content.get("notes")
    if (
        not isinstance(notes, list)
        or not any(isinstance(n, dict) and "body" in n for n in notes)
        or not all(isinstance(n, dict) and ("body" in n or "error" in n) for n in notes)
    ):
        return None
    lines: list[str] = []
    for entry in notes:
        error = entry.get("error") if isinstance(entry.get("error"), dict) else {}
        failed = f"{entry.get('noteId', '')}: {error.get('message', '')} ({error.get('code', '')})"
        drawn = _note(entry, style) or [style.dim(visible_line(failed))]
        lines += [*([""] if lines else []), *drawn]
    return lines


def _records(content: Mapping[str, Any], style: Style) -> list[str] | None:
    lists = {
        k: v for k, v in content.items() if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)
    }
    empty = [k for k, v in content.items() if isinstance(v, list) and not v]
    if not lists and not empty:
        return None
    lines = _scalars(content, {"workspaceUri"})
    for key, rows in lists.items():
        lines += ["", style.bold(f"{visible_line(key)} ({len(rows)})"), *render_table(rows, style)]
    if lines and not lines[0]:
        del lines[0]
    lines += [f"{visible_line(key)}: none" for key in empty]
    return lines


def _fields(content: Mapping[str, Any], style: Style, depth: int = 0) -> list[str]:
    lines = []
    pad = "  " * depth
    for key, value in content.items():
        if isinstance(value, dict):
            lines += [f"{pad}{visible_line(str(key))}:", *_fields(value, style, depth + 1)]
        else:
            lines.append(f"{pad}{visible_line(str(key))}: {_cell(value)}")
    return lines


RENDERERS: Sequence[Callable[[Mapping[str, Any], Style], list[str] | None]] = (
    _search,
    _note,
    _notes,
    _diff,
    _records,
)


def render_result(content: Mapping[str, Any], style: Style) -> list[str]:
    """Rule 1: the first renderer that fits the result's shape."""
    for renderer in RENDERERS:
        found = renderer(content, style)
        if found is not None:
            return found
    return _fields(content, style)
