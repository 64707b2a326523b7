"""`notes_list`: the notes of a workspace (or of a folder inside it), read-only.

What the listing leaves out on purpose is said, not silently dropped: a symlinked folder (or
note), or a folder on another filesystem, comes back under `skipped` with the reason, so a
workspace whose notes all sit behind a symlink does not simply look empty.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread

from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.registry import READ_ONLY, ToolCall, ToolDef, ToolResult, declare
from notewarden.tools.results import complete, iso8601

__all__ = ["notes_list"]

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "workspaceUri": {
            "type": "string",
            "minLength": 1,
            "maxLength": 4096,
            "description": "file: URI of a workspace granted to you, or of a folder inside it.",
        },
    },
    "required": ["workspaceUri"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "workspaceUri": {"type": "string"},
        "notes": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "Path relative to the workspace root."},
                    "title": {"type": "string"},
                    "size": {"type": "integer", "minimum": 0},
                    "modified": {"type": "string", "format": "date-time"},
                },
                "required": ["id", "title", "size", "modified"],
            },
        },
        "skipped": {
            "type": "array",
            "description": "Entries left out on purpose (present when there are any), each with why.",
            "items": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "reason": {"type": "string"}},
                "required": ["id", "reason"],
            },
        },
    },
    "required": ["workspaceUri", "notes"],
}


class ListTool:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def __call__(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        store = self.services.store
        notes, skipped = await anyio.to_thread.run_sync(
            lambda: (store.list_notes(scope), store.skipped(scope))
        )
        structured: dict[str, Any] = {
            "workspaceUri": str(scope.uri),
            "notes": [
                {"id": n.id, "title": n.title, "size": n.size, "modified": iso8601(n.modified)} for n in notes
            ],
        }
        if skipped:
            structured["skipped"] = [{"id": e.id, "reason": e.reason} for e in skipped]
        return complete(structured)


def notes_list(services: Services) -> ToolDef:
    return ToolDef(
        tool=declare(
            "notes_list",
            "List notes",
            "List the notes of a workspace (or of a folder inside it): id, title, size and "
            "last modification time, and what was skipped on purpose (symlinks, other filesystems) with why. "
            "Read-only.",
            INPUT_SCHEMA,
            OUTPUT_SCHEMA,
            **READ_ONLY,
        ),
        handler=ListTool(services),
        right=Right.READ,
    )
