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

`notes_read_many` reads up to `READ_MANY_MAX` notes; an error for one note (missing, not text) is
reported in its entry and does not fail the others. Its default cap, `DEFAULT_MAX_CHARS` shared
evenly among the notes, keeps one call as small as one `notes_read`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio.to_thread
import mcp_types as types

from notewarden.notes.editing import EditError, find_section, line_starts, section_text, section_version
from notewarden.notes.history import HistoryEntry
from notewarden.notes.markdown import headings, split_front_matter
from notewarden.notes.model import content_version
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.registry import (
    READ_ONLY,
    ToolCall,
    ToolDef,
    ToolFailure,
    ToolResult,
    declare,
    known_failure,
)
from notewarden.tools.results import NOTE_ID, NOTE_OBJECT, WORKSPACE_URI, complete, iso8601, note_object

__all__ = [
    "DEFAULT_MAX_CHARS",
    "HISTORY_ENTRY",
    "VERSIONED_NOTE",
    "decode_text",
    "history_object",
    "notes_read",
    "notes_read_many",
]

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
        return {**shown, **read_part(decode_text(data, note_id), arguments, max_chars)}

    async def read(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        max_chars = call.arguments.get("maxChars", DEFAULT_MAX_CHARS)
        shown = await anyio.to_thread.run_sync(self._read, scope, call.arguments, max_chars)
        return complete({"workspaceUri": str(scope.uri), **shown})

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


def _tool(
    name: str, title: str, description: str, inputs: dict[str, Any], outputs: dict[str, Any]
) -> types.Tool:
    closed = {"type": "object", "additionalProperties": False, **inputs}
    return declare(name, title, description, closed, {"type": "object", **outputs}, **READ_ONLY)


MAX_CHARS_ARGUMENT: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": MAX_CHARS}


def notes_read(services: Services) -> ToolDef:
    return ToolDef(
        tool=_tool(
            "notes_read",
            "Read a note",
            "Read one note: its markdown text as body and its version (for notes_update and notes_edit). "
            f"At most maxChars characters come back (default {DEFAULT_MAX_CHARS}); a longer note is cut at a "
            "line and says truncated: true and nextLine, so read on with lines. outline: true gives the "
            "headings (line ranges, sizes) without the body; section reads one heading's section "
            "('Projects > Atlas'); lines: [from, to] reads those lines; versionId reads a saved version "
            "(notes_history). Read-only.",
            {
                "properties": {
                    "workspaceUri": WORKSPACE_URI,
                    "noteId": NOTE_ID,
                    "outline": {"type": "boolean", "description": "The heading tree only, no body."},
                    "section": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 1000,
                        "description": "A heading's text, its path (Parent > Heading) or '## Heading'.",
                    },
                    "lines": {**LINE_RANGE, "description": "[from, to], 1-based, inclusive."},
                    "maxChars": {**MAX_CHARS_ARGUMENT, "description": f"Default {DEFAULT_MAX_CHARS}."},
                    "versionId": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 200,
                        "pattern": "^[A-Za-z0-9._-]+$",
                    },
                },
                "required": ["workspaceUri", "noteId"],
            },
            {
                "properties": {
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
                },
                "required": ["workspaceUri", "note", "totalLines"],
            },
        ),
        handler=ReadTools(services).read,
        right=Right.READ,
    )


def notes_read_many(services: Services) -> ToolDef:
    return ToolDef(
        tool=_tool(
            "notes_read_many",
            "Read several notes",
            f"Read up to {READ_MANY_MAX} notes in one call, each as notes_read returns it (body, version). A note "
            "that cannot be read has an error in its entry; the others are still returned. Each body is cut "
            f"at maxChars characters (default: {DEFAULT_MAX_CHARS} shared evenly), saying truncated: true. Read-only.",
            {
                "properties": {
                    "workspaceUri": WORKSPACE_URI,
                    "noteIds": {
                        "type": "array",
                        "items": NOTE_ID,
                        "minItems": 1,
                        "maxItems": READ_MANY_MAX,
                        "uniqueItems": True,
                    },
                    "maxChars": {**MAX_CHARS_ARGUMENT, "description": "Per note."},
                },
                "required": ["workspaceUri", "noteIds"],
            },
            {
                "properties": {
                    "workspaceUri": {"type": "string"},
                    "notes": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "noteId": {"type": "string"},
                                "note": VERSIONED_NOTE,
                                **WINDOW,
                                "error": {
                                    "type": "object",
                                    "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
                                    "required": ["code", "message"],
                                },
                            },
                            "required": ["noteId"],
                        },
                    },
                },
                "required": ["workspaceUri", "notes"],
            },
        ),
        handler=ReadTools(services).read_many,
        right=Right.READ,
    )
