"""`notes_read`, `notes_create`, `notes_update`, `notes_move`: one note at a time, never lost.

* A note's `version` is a digest of its bytes (`model.content_version`). `notes_update` writes
  only if the note is still at `expectedVersion`; otherwise it refuses with `version_conflict` and
  the current version in `structuredContent.error.currentVersion`, and nothing is written. The
  files store checks again at the swap (RENAME_EXCHANGE), so two racing updates of one version
  give one winner and one conflict. Writing what is already there succeeds: a retry is harmless.
* `notes_create` never replaces a file (O_EXCL); `notes_move` never replaces one either
  (RENAME_NOREPLACE) and stays inside the workspace: both paths are note ids, contained by the
  same rules as every other path.
* `body` is the note's whole markdown text in `notes_read` and `notes_update`; `notes_create`
  writes `title` as the note's heading above `body`.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
import mcp_types as types

from notewarden.notes.model import compose_note
from notewarden.notes.store import VersionConflict
from notewarden.services import Services
from notewarden.tools.notes_knowledge import similar_notes, similar_notice
from notewarden.tools.registry import ToolCall, ToolDef, ToolFailure, ToolResult
from notewarden.tools.results import (
    NOTE_ID,
    NOTE_OBJECT,
    WORKSPACE_URI,
    complete,
    note_object,
    require_note_path,
)

__all__ = ["notes_create", "notes_move", "notes_read", "notes_update"]

MAX_BODY_CHARS = 1_000_000
BODY: dict[str, Any] = {"type": "string", "maxLength": MAX_BODY_CHARS}
VERSIONED_NOTE: dict[str, Any] = {**NOTE_OBJECT, "required": [*NOTE_OBJECT["required"], "version"]}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _output(**properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"workspaceUri": {"type": "string"}, **properties},
        "required": ["workspaceUri", *properties],
    }


def decode_text(data: bytes, note_id: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailure(
            "not_text", f"{note_id} is not UTF-8 text; read it as a resource (resources/read) instead"
        ) from None


class EditTools:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def read(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.principal, call.arguments["workspaceUri"])
        note_id = call.arguments["noteId"]
        content = await anyio.to_thread.run_sync(self.services.store.read_note, scope, note_id)
        return complete(
            {
                "workspaceUri": str(scope.uri),
                "note": note_object(scope, content.note, content.version),
                "body": decode_text(content.data, note_id),
            }
        )

    async def create(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.principal, call.arguments["workspaceUri"])
        path = require_note_path(call.arguments["path"], "path")
        text = compose_note(call.arguments["title"], call.arguments["body"])
        if text is None:
            raise ToolFailure("invalid_arguments", "title cannot be written so that it reads back unchanged")
        similar = await anyio.to_thread.run_sync(similar_notes, self.services, scope, call.arguments["title"])
        content = await anyio.to_thread.run_sync(self.services.store.create_note, scope, path, text.encode())
        structured: dict[str, Any] = {
            "workspaceUri": str(scope.uri),
            "note": note_object(scope, content.note, content.version),
        }
        if similar:  # issue 14: a mention, not an error
            structured |= {
                "similar": [note_object(scope, n) for n in similar],
                "notice": similar_notice(similar),
            }
        return complete(structured)

    async def update(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.principal, call.arguments["workspaceUri"])
        note_id, expected = call.arguments["noteId"], call.arguments["expectedVersion"]
        data = call.arguments["body"].encode()
        try:
            content = await anyio.to_thread.run_sync(
                lambda: self.services.store.update_note(scope, note_id, data, expected_version=expected)
            )
        except VersionConflict as exc:
            raise ToolFailure("version_conflict", str(exc), {"currentVersion": exc.current_version}) from None
        return complete(
            {
                "workspaceUri": str(scope.uri),
                "note": note_object(scope, content.note, content.version),
                "previousVersion": expected,
            }
        )

    async def move(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.principal, call.arguments["workspaceUri"])
        note_id = call.arguments["noteId"]
        new_path = require_note_path(call.arguments["newPath"], "newPath")
        note = await anyio.to_thread.run_sync(self.services.store.move_note, scope, note_id, new_path)
        return complete({"workspaceUri": str(scope.uri), "from": note_id, "note": note_object(scope, note)})


def _tool(
    name: str, title: str, description: str, inputs: dict[str, Any], outputs: dict[str, Any], **hints: bool
) -> types.Tool:
    return types.Tool(
        name=name,
        title=title,
        description=description,
        input_schema=inputs,
        output_schema=outputs,
        annotations=types.ToolAnnotations(title=title, open_world_hint=False, **hints),
    )


def notes_read(services: Services) -> ToolDef:
    return ToolDef(
        tool=_tool(
            "notes_read",
            "Read a note",
            "Read one note: its whole markdown text as body, and its version (for notes_update). Read-only.",
            _schema({"workspaceUri": WORKSPACE_URI, "noteId": NOTE_ID}, ["workspaceUri", "noteId"]),
            _output(note=VERSIONED_NOTE, body={"type": "string"}),
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
        ),
        handler=EditTools(services).read,
    )


def notes_create(services: Services) -> ToolDef:
    return ToolDef(
        tool=_tool(
            "notes_create",
            "Create a note",
            "Create a new markdown note at path (relative to the workspace; missing folders are made) "
            "with title as its heading above body. Never replaces an existing file. The result lists "
            "existing notes with the same or a nearly identical title, if any (similar).",
            _schema(
                {
                    "workspaceUri": WORKSPACE_URI,
                    "path": {**NOTE_ID, "description": "Where to create it, ending in .md or .markdown."},
                    "title": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 200,
                        "pattern": r"^\S(?:[^\r\n]*\S)?$",
                    },
                    "body": BODY,
                },
                ["workspaceUri", "path", "title", "body"],
            ),
            {
                **_output(note=VERSIONED_NOTE),
                "properties": {
                    **_output(note=VERSIONED_NOTE)["properties"],
                    "similar": {
                        "type": "array",
                        "items": NOTE_OBJECT,
                        "description": "Existing notes with the same or a nearly identical title.",
                    },
                    "notice": {"type": "string"},
                },
            },
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
        ),
        handler=EditTools(services).create,
    )


def notes_update(services: Services) -> ToolDef:
    return ToolDef(
        tool=_tool(
            "notes_update",
            "Update a note",
            "Replace a note's whole text with body, only if it is still at expectedVersion (from notes_read). "
            "If someone changed it since, nothing is written and the error carries currentVersion: read it "
            "again, merge, retry.",
            _schema(
                {
                    "workspaceUri": WORKSPACE_URI,
                    "noteId": NOTE_ID,
                    "body": {**BODY, "description": "The note's complete new markdown text."},
                    "expectedVersion": {"type": "string", "minLength": 1, "maxLength": 128},
                },
                ["workspaceUri", "noteId", "body", "expectedVersion"],
            ),
            _output(note=VERSIONED_NOTE, previousVersion={"type": "string"}),
            read_only_hint=False,
            destructive_hint=True,
            idempotent_hint=True,
        ),
        handler=EditTools(services).update,
    )


def notes_move(services: Services) -> ToolDef:
    return ToolDef(
        tool=_tool(
            "notes_move",
            "Move a note",
            "Rename or move a note to newPath inside the same workspace (missing folders are made). "
            "Never replaces an existing file.",
            _schema(
                {
                    "workspaceUri": WORKSPACE_URI,
                    "noteId": NOTE_ID,
                    "newPath": {**NOTE_ID, "description": "The new id, ending in .md or .markdown."},
                },
                ["workspaceUri", "noteId", "newPath"],
            ),
            _output(note=NOTE_OBJECT, **{"from": {"type": "string"}}),
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
        ),
        handler=EditTools(services).move,
    )
