"""`notes_list`: the notes of a workspace (or of a folder inside it), read-only."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
import mcp_types as types

from notewarden.services import Services
from notewarden.tools.registry import ToolCall, ToolDef, ToolResult
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
    },
    "required": ["workspaceUri", "notes"],
}


class ListTool:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def __call__(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.principal, call.arguments["workspaceUri"])
        notes = await anyio.to_thread.run_sync(self.services.store.list_notes, scope)
        structured = {
            "workspaceUri": str(scope.uri),
            "notes": [
                {"id": n.id, "title": n.title, "size": n.size, "modified": iso8601(n.modified)} for n in notes
            ],
        }
        return complete(structured)


def notes_list(services: Services) -> ToolDef:
    return ToolDef(
        tool=types.Tool(
            name="notes_list",
            title="List notes",
            description="List the notes of a workspace (or of a folder inside it): id, title, size and "
            "last modification time. Read-only.",
            input_schema=INPUT_SCHEMA,
            output_schema=OUTPUT_SCHEMA,
            annotations=types.ToolAnnotations(
                title="List notes",
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        ),
        handler=ListTool(services),
    )
