"""`notes_list`: the notes of a workspace (or of a folder inside it), read-only.

What the listing leaves out on purpose is said, not silently dropped: a symlinked folder (or
note), or a folder on another filesystem, comes back under `skipped` with the reason, so a
workspace whose notes all sit behind a symlink does not simply look empty.

It pages like every listing (`tools.paging`): `DEFAULT_LIMIT` notes by id, `nextCursor` for the
next page (a listing of 20,000 notes in one answer was 6.3 MB: a flood for a model's context).
`skipped` comes with the first page.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread

from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.paging import cursor_key, listing_print, make_cursor, page_properties
from notewarden.tools.registry import ToolCall, ToolResult, declare
from notewarden.tools.results import complete, iso8601
from notewarden.tools.schemas import WORKSPACE_URI, args, returns

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "NOTES_LIST", "ListTool"]

DEFAULT_LIMIT, MAX_LIMIT = 200, 1000


class ListTool:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def __call__(self, call: ToolCall) -> ToolResult:
        scope = self.services.grants.authorize_workspace(call.caller, call.arguments["workspaceUri"])
        store = self.services.store
        limit = call.arguments.get("limit", DEFAULT_LIMIT)
        print_ = listing_print("notes_list", scope.uri)
        cursor = call.arguments.get("cursor")
        after: str | None = None
        if cursor is not None:
            after = cursor_key(cursor, print_, made_by="notes_list", shape=(str,))[0]
        notes, skipped = await anyio.to_thread.run_sync(
            lambda: (
                store.list_page(scope, after=after, limit=limit + 1),
                store.skipped(scope) if after is None else [],
            )
        )
        structured: dict[str, Any] = {
            "workspaceUri": str(scope.uri),
            "notes": [
                {"id": n.id, "title": n.title, "size": n.size, "modified": iso8601(n.modified)}
                for n in notes[:limit]
            ],
        }
        if len(notes) > limit:
            structured["nextCursor"] = make_cursor([notes[limit - 1].id], print_)
        if skipped:
            structured["skipped"] = [{"id": e.id, "reason": e.reason} for e in skipped]
        return complete(structured)


NOTES_LIST = declare(
    "notes_list",
    "List notes",
    "List the notes of a workspace (or of a folder inside it), by id: id, title, size and "
    f"last modification time, {DEFAULT_LIMIT} a page by default (limit up to {MAX_LIMIT}; pass "
    "nextCursor back as cursor for more), and what was skipped on purpose (symlinks, other "
    "filesystems) with why. Read-only.",
    args(
        {
            "workspaceUri": {
                **WORKSPACE_URI,
                "description": "file: URI of a workspace granted to you, or of a folder inside it.",
            }
        },
        page_properties(DEFAULT_LIMIT, MAX_LIMIT, "notes", cursor_chars=8192),
    ),
    returns(
        {
            "workspaceUri": {"type": "string"},
            "notes": {
                "type": "array",
                "items": returns(
                    {
                        "id": {"type": "string", "description": "Path relative to the workspace root."},
                        "title": {"type": "string"},
                        "size": {"type": "integer", "minimum": 0},
                        "modified": {"type": "string", "format": "date-time"},
                    },
                    ["id", "title", "size", "modified"],
                ),
            },
            "nextCursor": {
                "type": "string",
                "description": "Present when more notes follow: pass it as cursor.",
            },
            "skipped": {
                "type": "array",
                "description": "Entries left out on purpose (present when there are any; on the first page), each with why.",
                "items": returns({"id": {"type": "string"}, "reason": {"type": "string"}}, ["id", "reason"]),
            },
        },
        ["workspaceUri", "notes"],
    ),
    Right.READ,
)
