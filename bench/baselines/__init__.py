"""Baselines: what a user could write in an afternoon with the SDK, for side-by-side runs.

Both serve the same tool contract as notewarden over Streamable HTTP (2026-07-28) from an
in-memory note map, and do neither what notewarden does on every call: no exactly-once
ledger (a replayed accepted state is not detected), no directory-handle containment, no
bearer authentication, no re-check of the note between the two rounds.

    notes_delete {workspaceUri, title}   round 1: input_required with a form elicitation
                                         (pick a note id, confirm); round 2: complete
    notes_read   {workspaceUri, noteId}  a plain read: the note's title and body
    notes_search {workspaceUri, query}   notes whose title or body contains every word

A third, `minimal_notes` (issue 29), is the floor of the SDK's two-round flow: MCPServer as
`mcpserver_notes`, but the title is looked up in a dict and it serves no `notes_search`.
"""
