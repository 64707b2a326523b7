"""Baseline B: FastMCP, whose tool returns `InputRequiredResult` itself (the guard pattern).

Round 1 finds the candidates and returns the form with the candidate ids in
`requestState` (sealed by the SDK boundary FastMCP installs, ephemeral key); round 2
reads `ctx.input_responses` and `ctx.request_state` and deletes. Nothing records that an
accepted state was used.

    python -m bench.baselines.fastmcp_notes --port 8802 --workspace-uri file:///w --notes 1000
"""

# no `from __future__ import annotations`: FastMCP reads the signature's evaluated annotations
import json
import os
from typing import Any

os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")

import mcp_types as types
import uvicorn
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError

from bench.baselines.common import NoteMap, parse_args

notes = NoteMap("file:///unset", 0, 0)  # replaced by build()
mcp = FastMCP("notes-fastmcp")
KEY = "delete_choice"


@mcp.tool
async def notes_delete(
    workspaceUri: str, title: str, ctx: Context
) -> dict[str, Any] | types.InputRequiredResult:
    """Delete one note whose title matches, after the user picks and confirms it."""
    notes.check_workspace(workspaceUri)
    answer = (ctx.input_responses or {}).get(KEY)
    if answer is None or ctx.request_state is None:
        found = notes.by_title(title)
        if not found:
            raise ToolError(f"no note matches {title!r}")
        form = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=f"Delete a note: {len(found)} match “{title}”. Pick one and confirm.",
                requested_schema={
                    "type": "object",
                    "properties": {
                        "note_id": {
                            "type": "string",
                            "title": "Note to delete",
                            "oneOf": [{"const": m.id, "title": m.title} for m in found],
                        },
                        "confirm": {"type": "boolean", "title": "Yes, delete it", "default": False},
                    },
                    "required": ["note_id", "confirm"],
                },
            )
        )
        state = json.dumps([m.id for m in found])
        return types.InputRequiredResult(input_requests={KEY: form}, request_state=state)
    offered = json.loads(ctx.request_state)
    if not isinstance(answer, types.ElicitResult) or answer.action != "accept" or not answer.content:
        return {"outcome": "declined", "workspaceUri": workspaceUri, "deleted": []}
    note_id, confirm = answer.content.get("note_id"), answer.content.get("confirm")
    if note_id not in offered:
        raise ToolError(f"note_id {note_id!r} was not offered")
    if confirm is not True:
        return {"outcome": "not_confirmed", "workspaceUri": workspaceUri, "deleted": []}
    return notes.delete(workspaceUri, str(note_id))


@mcp.tool
async def notes_read(workspaceUri: str, noteId: str) -> dict[str, Any]:
    """Read one note."""
    return notes.read(workspaceUri, noteId)


@mcp.tool
async def notes_search(workspaceUri: str, query: str) -> dict[str, Any]:
    """Notes whose title or body contains every word of the query."""
    return notes.search_result(workspaceUri, query)


def build(workspace_uri: str, first: int, count: int) -> FastMCP:
    """The server, holding bench notes `first`..`first + count - 1`."""
    global notes
    notes = NoteMap(workspace_uri, first, count, error=ToolError)
    return mcp


if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    app = build(args.workspace_uri, args.first, args.notes).http_app(json_response=args.json_response)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_config=None, access_log=False)
