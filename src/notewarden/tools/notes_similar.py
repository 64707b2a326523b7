"""`notes_similar {workspaceUri, noteId, limit?}`: the notes closest in meaning to a note that it does
not already link to, each with the section that matched (issue 25).

Rule 1: closeness is per section. Each section of the note (`notes.sections`) asks the store for the
notes whose sections are closest (`NoteStore.nearest`); a note's score is its best match with any of
them, and the result names both sections: `section` (theirs, as `notes_read {section}` takes it) and
`fromSection` (the note's own).

Rule 2: what it already links to is left out (its outgoing links' targets, and itself): the point is
the connections not yet made. Every candidate is found and listed inside the caller's read reach
(`scope.regions`, then the store's listing with the scope): a note the principal may not read is
never shown, nor counted.

Rule 3: it needs a model (`notewarden.embeddings`); without one, or when the model fails (an
endpoint that does not answer), it answers `meaning_unavailable` with the reason and the fix.
"""

from __future__ import annotations

import anyio.to_thread

from notewarden.embeddings import EmbeddingFailed
from notewarden.notes.store import MeaningHit, ProgressSink
from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.paging import limit_argument
from notewarden.tools.registry import ToolCall, ToolFailure, ToolResult, declare
from notewarden.tools.results import complete, note_object, progress_sink
from notewarden.tools.schemas import NOTE_ID, NOTE_OBJECT, WORKSPACE_URI, args, returns

__all__ = ["NOTES_SIMILAR", "SimilarTool"]

DEFAULT_LIMIT = 10
MAX_LIMIT = 50


class SimilarTool:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def __call__(self, call: ToolCall) -> ToolResult:
        uri, note_id = call.arguments["workspaceUri"], call.arguments["noteId"]
        limit = call.arguments.get("limit", DEFAULT_LIMIT)
        scope = self.services.grants.authorize_workspace(call.caller, uri)
        searching = self.services.search
        embedder = searching.embedder
        if embedder is None:
            raise ToolFailure(
                "meaning_unavailable",
                f"notes_similar compares what notes mean and this server has no model: {searching.reason}",
            )
        store = self.services.store

        def find(sink: ProgressSink | None) -> list[tuple[MeaningHit, str]]:
            store.embed_pending(scope, embedder, progress=sink)
            sections = store.note_sections(scope, embedder, note_id)
            linked = {v.target for v in store.links(scope, note_id, limit=0).outgoing if v.target is not None}
            exclude = frozenset({note_id, *linked})
            best: dict[str, tuple[MeaningHit, str]] = {}
            for section, vector in sections:
                for hit in store.nearest(scope, embedder, vector, limit=limit, exclude=exclude):
                    known = best.get(hit.note.id)
                    if known is None or hit.score > known[0].score:
                        best[hit.note.id] = (hit, section)
            return sorted(best.values(), key=lambda pair: (-pair[0].score, pair[0].note.id))[:limit]

        async with progress_sink(call.report_progress) as sink:
            try:
                found = await anyio.to_thread.run_sync(find, sink)
            except EmbeddingFailed as failed:
                raise ToolFailure(
                    "meaning_unavailable", f"notes_similar could not compare notes: {failed}"
                ) from None
        return complete(
            {
                "workspaceUri": str(scope.uri),
                "noteId": note_id,
                "model": embedder.name,
                "results": [
                    {
                        **note_object(scope, hit.note),
                        "score": round(hit.score, 4),
                        "section": hit.section,
                        "fromSection": section,
                    }
                    for hit, section in found
                ],
            }
        )


NOTES_SIMILAR = declare(
    "notes_similar",
    "Notes similar in meaning",
    "The notes closest in meaning to a note that it does not link to yet, best first, each with the "
    "section that matched (theirs and the note's own): connections worth making. Needs the server's "
    "model (notes_search's ranking says whether there is one). Read-only.",
    args(
        {"workspaceUri": WORKSPACE_URI, "noteId": NOTE_ID},
        {"limit": limit_argument(DEFAULT_LIMIT, MAX_LIMIT)},
    ),
    returns(
        {
            "workspaceUri": {"type": "string"},
            "noteId": {"type": "string"},
            "model": {"type": "string", "description": "The model that compared the notes."},
            "results": {
                "type": "array",
                "items": {
                    **NOTE_OBJECT,
                    "properties": {
                        **NOTE_OBJECT["properties"],
                        "score": {
                            "type": "number",
                            "description": "Cosine similarity of the two sections, -1 to 1.",
                        },
                        "section": {
                            "type": "string",
                            "description": "Its section that matched (Parent > Heading; pass it to notes_read as "
                            "section); empty: the text before the first heading.",
                        },
                        "fromSection": {
                            "type": "string",
                            "description": "The section of noteId that matched it.",
                        },
                    },
                    "required": [*NOTE_OBJECT["required"], "score", "section", "fromSection"],
                },
            },
        },
        ["workspaceUri", "noteId", "model", "results"],
    ),
    Right.READ,
)
