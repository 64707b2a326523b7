"""Baseline A: the official SDK's high-level `MCPServer`, in its `Resolve`/`Elicit` style.

The confirmation is a resolver that finds the candidates and returns `Elicit[...]`; the
SDK turns it into `input_required`, seals the state (AES-GCM, ephemeral key) and, on the
retry, re-runs the resolver and injects the accepted answer. Nothing records that an
accepted state was used: replaying it deletes again whatever it names.

    python -m bench.baselines.mcpserver_notes --port 8801 --workspace-uri file:///w --notes 1000
"""

# no `from __future__ import annotations`: the SDK reads `Resolve(...)` from evaluated annotations
from typing import Annotated, Any

import uvicorn
from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from bench.baselines.common import NoteMap, parse_args

notes = NoteMap("file:///unset", 0, 0)  # replaced by build()
mcp = MCPServer("notes-mcpserver", log_level="WARNING")


class DeleteChoice(BaseModel):
    note_id: str = Field(title="Note to delete")
    confirm: bool = Field(default=False, title="Yes, delete the selected note")


async def delete_choice(workspaceUri: str, title: str) -> Elicit[DeleteChoice]:
    notes.check_workspace(workspaceUri)
    found = notes.by_title(title)
    if not found:
        raise ToolError(f"no note matches {title!r}")
    listing = "; ".join(f"{m.title} ({m.id})" for m in found)
    return Elicit(
        f"Delete a note: {len(found)} match “{title}”: {listing}. Pick one and confirm.", DeleteChoice
    )


@mcp.tool()
async def notes_delete(
    workspaceUri: str, title: str, choice: Annotated[DeleteChoice, Resolve(delete_choice)]
) -> dict[str, Any]:
    """Delete one note whose title matches, after the user picks and confirms it."""
    if not choice.confirm:
        return {"outcome": "not_confirmed", "workspaceUri": workspaceUri, "deleted": []}
    return notes.delete(workspaceUri, choice.note_id)


@mcp.tool()
async def notes_read(workspaceUri: str, noteId: str) -> dict[str, Any]:
    """Read one note."""
    return notes.read(workspaceUri, noteId)


@mcp.tool()
async def notes_search(workspaceUri: str, query: str) -> dict[str, Any]:
    """Notes whose title or body contains every word of the query."""
    return notes.search_result(workspaceUri, query)


def build(workspace_uri: str, first: int, count: int) -> MCPServer:
    """The server, holding bench notes `first`..`first + count - 1`."""
    global notes
    notes = NoteMap(workspace_uri, first, count, error=ToolError)
    return mcp


if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    app = build(args.workspace_uri, args.first, args.notes).streamable_http_app(
        json_response=args.json_response
    )
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_config=None, access_log=False)
