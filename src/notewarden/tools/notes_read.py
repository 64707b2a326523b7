"""`notes_read` and `notes_read_many`: a note whole, in parts, or as an outline; never cut silently.

Rule 1: what is read is a window of lines: the whole note, one `section` (a heading, as
`notes_edit` names it), or `lines: [from, to]` (1-based, inclusive; `to` past the end reads to
the end). Lines end at LF (`notes.editing`).

Rule 2: at most `maxChars` characters of body come back (default `DEFAULT_MAX_CHARS`). A longer
window is cut after its last whole line that fits, and says so: `truncated: true`, `lines` (what
came back), `nextLine` (where to continue). Only a single line longer than `maxChars` is cut
inside, and then `cutLine` names it. So a huge note never floods a model's context and a cut is
never silent.

Rule 3: `outline: true` returns no body: the heading tree (each heading's level, text, path, line
range, size in characters and `sectionVersion`, which `notes_edit` takes to refuse replacing a
section someone changed since) and the front matter's keys.

Rule 4: `versionId` (from `notes_history`) reads a saved version instead of the current content,
with the same options; `note` is still the current note.

Rule 5: `includeAttachments: true` also returns the images the part read embeds (`![[x.png]]`,
`![](x.png)` on the lines `body` holds), resolved as Obsidian opens them and typed by their content
(`notes.attachments`), as image content blocks after the text block: at most `IMAGES_MAX` images and
`IMAGES_MAX_BYTES` bytes in all, each image once, in the order of the note. Every embedded
attachment not returned is named in `attachments.leftOut` with why: `missing`, `not_an_image` (a
pdf, audio, video, csv), `svg_as_text` (SVG can carry script: read it as text with
`resources/read`), `too_large` (over `ATTACHMENT_MAX_BYTES`), `over_budget`, `unreadable` (a symlink,
a folder you may not read) or `unavailable` (a workspace kept in a database has no files). An
argument of `notes_read` rather than a tool of its own: the images belong to the note's text the
model reads, in one call, and `notes_read` already chose the part (`section`, `lines`) whose
images are wanted.

`notes_read_many` reads up to `READ_MANY_MAX` notes; an error for one note (missing, not text) is
reported in its entry and does not fail the others. Its default cap, `DEFAULT_MAX_CHARS` shared
evenly among the notes, keeps one call as small as one `notes_read`.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import anyio.to_thread
import mcp_types as types

from notewarden.notes.attachments import (
    ATTACHMENT_MAX_BYTES,
    FORMATS,
    IMAGE_BLOCK_TYPES,
    AttachmentsUnavailable,
    is_attachment,
    read_attachment,
    served_type,
    suffix,
)
from notewarden.notes.editing import EditError, find_section, line_starts, section_text, section_version
from notewarden.notes.history import HistoryEntry
from notewarden.notes.markdown import Link, headings, parse_note, split_front_matter
from notewarden.notes.model import content_version, note_stem
from notewarden.notes.store import NoteStore
from notewarden.scope.fs_errors import FsError
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.rights import Right, RightMissing
from notewarden.services import Services
from notewarden.tools.registry import ToolCall, ToolFailure, ToolResult, declare, known_failure
from notewarden.tools.results import complete, iso8601, note_object, note_uri
from notewarden.tools.schemas import ISSUED_ID, NOTE_ID, NOTE_OBJECT, WORKSPACE_URI, args, returns

__all__ = [
    "DEFAULT_MAX_CHARS",
    "HISTORY_ENTRY",
    "NOTES_READ",
    "NOTES_READ_MANY",
    "VERSIONED_NOTE",
    "ReadTools",
    "decode_text",
    "history_object",
]

_BLOCKS = "\0blocks"
"""Where `_read` hands the image blocks to `read` (never part of the structured result)."""
DEFAULT_MAX_CHARS = 50_000
MAX_CHARS = 1_000_000
READ_MANY_MAX = 20
OUTLINE_MAX = 1000
VERSIONED_NOTE: dict[str, Any] = {**NOTE_OBJECT, "required": [*NOTE_OBJECT["required"], "version"]}
LINE_RANGE: dict[str, Any] = {
    "type": "array",
    "items": {"type": "integer", "minimum": 1},
    "minItems": 2,
    "maxItems": 2,
}
HISTORY_ENTRY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "versionId": {"type": "string", "description": "Pass to notes_revert or notes_read."},
        "savedAt": {"type": "string", "format": "date-time"},
        "principal": {"type": "string", "description": "Who replaced this version."},
        "tool": {"type": "string"},
        "summary": {"type": "string", "description": "What the change that replaced it did."},
        "size": {"type": "integer", "minimum": 0},
        "version": {"type": "string", "description": "The note's version while this content was current."},
    },
    "required": ["versionId", "savedAt", "principal", "tool", "summary", "size", "version"],
}
WINDOW: dict[str, Any] = {
    "body": {"type": "string"},
    "totalLines": {"type": "integer", "minimum": 0},
    "lines": {**LINE_RANGE, "description": "The lines body holds (1-based, inclusive)."},
    "truncated": {"type": "boolean", "description": "True when body stops before the window's end."},
    "nextLine": {"type": "integer", "minimum": 1, "description": "When truncated: read on from this line."},
    "cutLine": {
        "type": "integer",
        "minimum": 1,
        "description": "A line longer than maxChars, returned only in part; raise maxChars to read it whole.",
    },
}
OUTLINE_ITEM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "level": {"type": "integer", "minimum": 1, "maximum": 6},
        "heading": {"type": "string"},
        "path": {"type": "string", "description": "Parent > Heading: how notes_edit and section name it."},
        "lines": LINE_RANGE,
        "chars": {"type": "integer", "minimum": 0},
        "sectionVersion": {"type": "string"},
    },
    "required": ["level", "heading", "path", "lines", "chars", "sectionVersion"],
}


def decode_text(data: bytes, note_id: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailure(
            "not_text", f"{note_id} is not UTF-8 text; read it as a resource (resources/read) instead"
        ) from None


def history_object(entry: HistoryEntry) -> dict[str, Any]:
    return {
        "versionId": entry.version_id,
        "savedAt": iso8601(entry.saved_at),
        "principal": entry.principal,
        "tool": entry.tool,
        "summary": entry.summary,
        "size": entry.size,
        "version": entry.version,
    }


def window(text: str, first: int, last: int | None, max_chars: int) -> dict[str, Any]:
    """Lines `first..last` of `text` (Rule 1), at most `max_chars` of them (Rule 2)."""
    starts = line_starts(text)
    total = len(starts) - 1
    shown: dict[str, Any] = {"totalLines": total, "truncated": False}
    if first > total:
        if first == 1:  # an empty note
            return {**shown, "body": ""}
        raise ToolFailure("invalid_range", f"the note has {total} lines; lines must start at 1-{total}")
    last = total if last is None else min(last, total)
    if last < first:
        raise ToolFailure(
            "invalid_range", f"lines [{first}, {last}] is empty; give [from, to] with from <= to"
        )
    body = text[starts[first - 1] : starts[last]]
    if len(body) > max_chars:
        cut = body[:max_chars]
        whole = cut.rfind("\n") + 1
        if whole:
            body, last = cut[:whole], first + cut.count("\n", 0, whole) - 1
            shown.update(truncated=True, nextLine=last + 1)
        else:
            body, last = cut, first
            shown.update(truncated=True, cutLine=first, nextLine=first + 1)
    return {**shown, "body": body, "lines": [first, last]}


def outline(text: str) -> dict[str, Any]:
    """Rule 3: the heading tree and the front matter's keys, without the body."""
    starts = line_starts(text)
    found = headings(text)
    items = []
    for h in found[:OUTLINE_MAX]:
        section = section_text(text, h, starts)
        items.append(
            {
                "level": h.level,
                "heading": h.text,
                "path": " > ".join(h.path),
                "lines": [h.line, min(h.end_line, len(starts) - 1)],
                "chars": len(section),
                "sectionVersion": content_version(section.encode()),
            }
        )
    shown: dict[str, Any] = {"totalLines": len(starts) - 1, "outline": items}
    if len(found) > OUTLINE_MAX:
        shown["outlineTruncated"] = True
    front = split_front_matter(text)
    if front is not None:
        shown["frontMatter"] = {
            "lines": [1, front.lines],
            "keys": [str(k) for k in (front.data or {})],
            **({"error": front.error} if front.error else {}),
        }
    return shown


def read_part(text: str, arguments: Mapping[str, Any], max_chars: int) -> dict[str, Any]:
    """The part of `text` the arguments ask for: outline, section, lines, or all (Rules 1-3)."""
    asked = [k for k in ("outline", "section", "lines") if arguments.get(k) not in (None, False)]
    if len(asked) > 1:
        raise ToolFailure("invalid_arguments", f"give at most one of outline, section and lines, not {asked}")
    if arguments.get("outline"):
        return outline(text)
    if "section" in arguments:
        try:
            heading = find_section(text, arguments["section"])
        except EditError as exc:
            raise ToolFailure(exc.code, str(exc), exc.details) from None
        starts = line_starts(text)
        shown = window(text, heading.line, heading.end_line, max_chars)
        shown["section"] = {
            "heading": heading.text,
            "path": " > ".join(heading.path),
            "lines": [heading.line, min(heading.end_line, len(starts) - 1)],
            "sectionVersion": section_version(text, heading, starts),
        }
        return shown
    if "lines" in arguments:
        first, last = arguments["lines"]
        return window(text, first, last, max_chars)
    return window(text, 1, None, max_chars)


IMAGES_MAX = 8
IMAGES_MAX_BYTES = 4 * 1024 * 1024
"""Rule 5's budget: the raw bytes of the images returned (base64 adds a third)."""


def _embedded(text: str, note_id: str, shown: Mapping[str, Any]) -> list[Link]:
    """The attachments embedded on the lines `body` holds (none for an outline)."""
    if "body" not in shown or not shown["body"]:
        return []
    first, last = shown.get("lines", (1, 1))
    found = parse_note(text, note_stem(note_id), with_headings=False).links
    return [link for link in found if link.embed and is_attachment(link.path) and first <= link.line <= last]


def embedded_images(
    store: NoteStore, scope: WorkspaceScope, note_id: str, text: str, links: list[Link]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[types.ImageContent]]:
    """Rule 5: the images `links` (of `text`) embed within the budget, what was left out and why, the
    blocks; resolved through the attachments `store` knows (`NoteStore.attachment_vault`)."""
    included: list[dict[str, Any]] = []
    left: list[dict[str, Any]] = []
    blocks: list[types.ImageContent] = []

    def _left_out(link: Link, path: str | None, reason: str, message: str) -> dict[str, Any]:
        written = text[link.span[0] : link.span[1]]
        shown: dict[str, Any] = {"written": written, "line": link.line, "reason": reason, "message": message}
        return {**shown, "path": path} if path is not None else shown

    if not links:
        return included, left, blocks
    try:
        vault = store.attachment_vault(scope)
    except AttachmentsUnavailable as exc:
        return included, [_left_out(link, None, "unavailable", str(exc)) for link in links], blocks
    spent, seen = 0, set[str]()
    for link in links:
        path = vault.resolve(link.path, link.style, note_id).target
        if path is None:
            left.append(_left_out(link, None, "missing", f"{link.path} opens no attachment you may read"))
            continue
        if path in seen:
            continue
        seen.add(path)
        claimed = FORMATS[suffix(path)]
        if not claimed.startswith("image/"):
            left.append(
                _left_out(link, path, "not_an_image", f"{path} is {claimed}; read it with resources/read")
            )
            continue
        if claimed == "image/svg+xml":
            left.append(_left_out(link, path, "svg_as_text", SVG_LEFT_OUT))
            continue
        try:
            size = scope.root.stat_note(scope.check(path)).identity.size
            if size > ATTACHMENT_MAX_BYTES:
                message = f"{path} is {size} bytes; at most {ATTACHMENT_MAX_BYTES} are read"
                left.append(_left_out(link, path, "too_large", message))
                continue
            if len(blocks) >= IMAGES_MAX or spent + size > IMAGES_MAX_BYTES:
                message = f"at most {IMAGES_MAX} images and {IMAGES_MAX_BYTES} bytes come back; read it with resources/read"
                left.append(_left_out(link, path, "over_budget", message))
                continue
            data = read_attachment(scope, path)
        except (FsError, RightMissing) as exc:
            left.append(_left_out(link, path, "unreadable", str(exc)))
            continue
        served = served_type(path, data)
        if served.mime_type not in IMAGE_BLOCK_TYPES:
            svg = served.mime_type == "image/svg+xml"
            why = (
                SVG_LEFT_OUT
                if svg
                else f"{served.mismatch or f'{path} is {served.mime_type}'}; {IMAGE_KINDS}"
            )
            left.append(_left_out(link, path, "svg_as_text" if svg else "not_an_image", why))
            continue
        spent += len(data)
        blocks.append(types.ImageContent(data=base64.b64encode(data).decode(), mime_type=served.mime_type))
        included.append(
            {
                "path": path,
                "uri": note_uri(scope, path),
                "mimeType": served.mime_type,
                "size": len(data),
                "line": link.line,
                **({"typeMismatch": served.mismatch} if served.mismatch else {}),
            }
        )
    return included, left, blocks


IMAGE_KINDS = "only PNG, JPEG, GIF and WebP are sent as images; read it with resources/read"
SVG_LEFT_OUT = (
    "SVG is text that can carry script, so it is never sent as an image; read it as text with resources/read"
)


class ReadTools:
    def __init__(self, services: Services) -> None:
        self.services = services

    def _read(self, scope: WorkspaceScope, arguments: Mapping[str, Any], max_chars: int) -> dict[str, Any]:
        """The current note, and the part asked for of it or of a saved version (Rule 4)."""
        note_id, version_id = arguments["noteId"], arguments.get("versionId")
        current = self.services.store.read_note(scope, note_id)
        shown: dict[str, Any] = {"note": note_object(scope, current.note, current.version)}
        data = current.data
        if version_id is not None:
            entry, data = self.services.store.saved_version(scope, note_id, version_id)
            shown["saved"] = history_object(entry)
        text = decode_text(data, note_id)
        shown.update(read_part(text, arguments, max_chars))
        if arguments.get("includeAttachments"):
            links = _embedded(text, note_id, shown)
            included, left, blocks = embedded_images(
                self.services.store, scope.whole_workspace(), note_id, text, links
            )
            shown["attachments"] = {"included": included, "leftOut": left}
            shown[_BLOCKS] = blocks
        return shown

    async def read(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        max_chars = call.arguments.get("maxChars", DEFAULT_MAX_CHARS)
        shown = await anyio.to_thread.run_sync(self._read, scope, call.arguments, max_chars)
        blocks = shown.pop(_BLOCKS, [])
        result = complete({"workspaceUri": str(scope.uri), **shown})
        result.content = [*result.content, *blocks]
        return result

    async def read_many(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        note_ids = call.arguments["noteIds"]
        max_chars = call.arguments.get("maxChars", DEFAULT_MAX_CHARS // len(note_ids))

        def read_all() -> list[dict[str, Any]]:
            notes = []
            for note_id in note_ids:
                try:
                    notes.append({"noteId": note_id, **self._read(scope, {"noteId": note_id}, max_chars)})
                except Exception as exc:
                    failure = known_failure(exc)
                    if failure is None:
                        raise
                    notes.append(
                        {"noteId": note_id, "error": {"code": failure.code, "message": str(failure)}}
                    )
            return notes

        notes = await anyio.to_thread.run_sync(read_all)
        return complete({"workspaceUri": str(scope.uri), "notes": notes})


ATTACHMENTS_OBJECT: dict[str, Any] = {
    "type": "object",
    "description": "With includeAttachments: the images returned as image content (in this order) and the "
    "embedded attachments left out.",
    "properties": {
        "included": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "uri": {"type": "string"},
                    "mimeType": {"type": "string", "description": "From the content, not the name."},
                    "size": {"type": "integer", "minimum": 0},
                    "line": {"type": "integer", "minimum": 1},
                    "typeMismatch": {"type": "string"},
                },
                "required": ["path", "uri", "mimeType", "size", "line"],
            },
        },
        "leftOut": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "written": {"type": "string"},
                    "line": {"type": "integer", "minimum": 1},
                    "path": {"type": "string"},
                    "reason": {
                        "enum": [
                            "missing",
                            "not_an_image",
                            "svg_as_text",
                            "too_large",
                            "over_budget",
                            "unreadable",
                            "unavailable",
                        ]
                    },
                    "message": {"type": "string"},
                },
                "required": ["written", "line", "reason", "message"],
            },
        },
    },
    "required": ["included", "leftOut"],
}
MAX_CHARS_ARGUMENT: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": MAX_CHARS}


NOTES_READ = declare(
    "notes_read",
    "Read a note",
    "Read one note: its markdown text as body and its version (for notes_update and notes_edit). "
    f"At most maxChars characters come back (default {DEFAULT_MAX_CHARS}); a longer note is cut at a "
    "line and says truncated: true and nextLine, so read on with lines. outline: true gives the "
    "headings (line ranges, sizes) without the body; section reads one heading's section "
    "('Projects > Atlas'); lines: [from, to] reads those lines; versionId reads a saved version "
    "(notes_history). includeAttachments: true also returns the images it embeds as image content. Read-only.",
    args(
        {"workspaceUri": WORKSPACE_URI, "noteId": NOTE_ID},
        {
            "outline": {"type": "boolean", "description": "The heading tree only, no body."},
            "section": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1000,
                "description": "A heading's text, its path (Parent > Heading) or '## Heading'.",
            },
            "lines": {**LINE_RANGE, "description": "[from, to], 1-based, inclusive."},
            "maxChars": {**MAX_CHARS_ARGUMENT, "description": f"Default {DEFAULT_MAX_CHARS}."},
            "versionId": ISSUED_ID,
            "includeAttachments": {
                "type": "boolean",
                "default": False,
                "description": f"Also return the images the part read embeds, as image content (at most "
                f"{IMAGES_MAX} images, {IMAGES_MAX_BYTES} bytes); attachments.leftOut names the others and why.",
            },
        },
    ),
    returns(
        {
            "workspaceUri": {"type": "string"},
            "note": VERSIONED_NOTE,
            **WINDOW,
            "section": {
                "type": "object",
                "properties": {
                    "heading": {"type": "string"},
                    "path": {"type": "string"},
                    "lines": LINE_RANGE,
                    "sectionVersion": {"type": "string", "description": "Pass to notes_edit."},
                },
                "required": ["heading", "path", "lines", "sectionVersion"],
            },
            "outline": {"type": "array", "items": OUTLINE_ITEM},
            "outlineTruncated": {"type": "boolean"},
            "frontMatter": {
                "type": "object",
                "properties": {
                    "lines": LINE_RANGE,
                    "keys": {"type": "array", "items": {"type": "string"}},
                    "error": {"type": "string"},
                },
                "required": ["lines", "keys"],
            },
            "saved": HISTORY_ENTRY,
            "attachments": ATTACHMENTS_OBJECT,
        },
        ["workspaceUri", "note", "totalLines"],
    ),
    Right.READ,
)
NOTES_READ_MANY = declare(
    "notes_read_many",
    "Read several notes",
    f"Read up to {READ_MANY_MAX} notes in one call, each as notes_read returns it (body, version). A note "
    "that cannot be read has an error in its entry; the others are still returned. Each body is cut "
    f"at maxChars characters (default: {DEFAULT_MAX_CHARS} shared evenly), saying truncated: true. Read-only.",
    args(
        {
            "workspaceUri": WORKSPACE_URI,
            "noteIds": {
                "type": "array",
                "items": NOTE_ID,
                "minItems": 1,
                "maxItems": READ_MANY_MAX,
                "uniqueItems": True,
            },
        },
        {"maxChars": {**MAX_CHARS_ARGUMENT, "description": "Per note."}},
    ),
    returns(
        {
            "workspaceUri": {"type": "string"},
            "notes": {
                "type": "array",
                "items": returns(
                    {
                        "noteId": {"type": "string"},
                        "note": VERSIONED_NOTE,
                        **WINDOW,
                        "error": returns(
                            {"code": {"type": "string"}, "message": {"type": "string"}}, ["code", "message"]
                        ),
                    },
                    ["noteId"],
                ),
            },
        },
        ["workspaceUri", "notes"],
    ),
    Right.READ,
)
