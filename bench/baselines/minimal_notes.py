"""Baseline C, the minimal one: the SDK's two-round `Resolve`/`Elicit` flow and a dict lookup.

The floor of a confirmed delete on the official SDK (issue 29): `MCPServer` exactly as in
baseline A (`mcpserver_notes`), but a title query is answered from a dict of title words
built once at start (no scan of the notes), the elicitation message does not list the
candidates, and nothing else is done: no ledger, no authentication, no containment, no
re-check between the rounds. A plain read is one dict lookup.

    python -m bench.baselines.minimal_notes --port 8803 --workspace-uri file:///w --notes 1000
"""

# no `from __future__ import annotations`: the SDK reads `Resolve(...)` from evaluated annotations
from typing import Annotated, Any

import uvicorn
from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from bench.baselines.common import Memo, NoteMap, parse_args

notes = NoteMap("file:///unset", 0, 0)  # replaced by build()
by_word: dict[str, set[str]] = {}  # casefolded title word -> note ids
mcp = MCPServer("notes-minimal", log_level="WARNING")


class DeleteChoice(BaseModel):
    note_id: str = Field(title="Note to delete")
    confirm: bool = Field(default=False, title="Yes, delete the selected note")


def by_title(query: str) -> list[Memo]:
    """The notes whose title has every word of `query` as a word: dict lookups, no scan."""
    words = query.casefold().split()
    if not words:
        return []
    ids = set.intersection(*(by_word.get(w, set()) for w in words))
    return [notes.notes[i] for i in sorted(ids) if i in notes.notes]


async def delete_choice(workspaceUri: str, title: str) -> Elicit[DeleteChoice]:
    notes.check_workspace(workspaceUri)
    found = by_title(title)
    if not found:
        raise ToolError(f"no note matches {title!r}")
    return Elicit(f"Delete a note: {len(found)} match “{title}”. Pick one and confirm.", DeleteChoice)


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


def build(workspace_uri: str, first: int, count: int) -> MCPServer:
    """The server, holding bench notes `first`..`first + count - 1`."""
    global notes
    notes = NoteMap(workspace_uri, first, count, error=ToolError)
    by_word.clear()
    for memo in notes.notes.values():
        for word in memo.title.casefold().split():
            by_word.setdefault(word, set()).add(memo.id)
    return mcp


if __name__ == "__main__":
    args = parse_args(__doc__.splitlines()[0])
    app = build(args.workspace_uri, args.first, args.notes).streamable_http_app(
        json_response=args.json_response
    )
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_config=None, access_log=False)
