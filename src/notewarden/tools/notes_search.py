"""`notes_search`: ranked full-text search over titles, paths and bodies, with opaque cursors.

A page holds at most `limit` hits; `nextCursor` resumes after the last one. The cursor is the
(rank, id) of that hit plus a fingerprint of the workspace and query: keyset pagination, so a page
never repeats a hit of an earlier page while the workspace is unchanged, and a cursor of another
query is refused rather than silently misapplied. Every hit was re-checked on disk just before
it was returned (`notes.index`, Rule 2): a deleted or moved note is never a hit.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import Any

import anyio.to_thread
import mcp_types as types

from notewarden.notes.model import search_terms
from notewarden.services import Services
from notewarden.tools.registry import ToolCall, ToolDef, ToolFailure, ToolResult
from notewarden.tools.results import NOTE_OBJECT, WORKSPACE_URI, complete, note_object, progress_sink

__all__ = ["notes_search"]

DEFAULT_LIMIT = 10
MAX_LIMIT = 50

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "workspaceUri": WORKSPACE_URI,
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": 500,
            "pattern": r"\w",
            "description": "Words to find; every word must start a word of the note's title, path or body "
            "(case-insensitive). Title matches rank highest.",
        },
        "cursor": {"type": "string", "maxLength": 2000, "description": "nextCursor of the previous page."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
    },
    "required": ["workspaceUri", "query"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "workspaceUri": {"type": "string"},
        "query": {"type": "string"},
        "results": {
            "type": "array",
            "items": {
                **NOTE_OBJECT,
                "properties": {
                    **NOTE_OBJECT["properties"],
                    "snippet": {"type": "string", "description": "Matching words are in **bold**."},
                },
                "required": [*NOTE_OBJECT["required"], "snippet"],
            },
        },
        "nextCursor": {"type": "string", "description": "Present when more results follow."},
    },
    "required": ["workspaceUri", "query", "results"],
}


def fingerprint(workspace_uri: str, query: str) -> str:
    return hashlib.sha256(f"{workspace_uri}\0{query}".encode()).hexdigest()[:16]


def encode_cursor(position: tuple[float, str], print_: str) -> str:
    raw = json.dumps([position[0], position[1], print_], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, print_: str) -> tuple[float, str]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        score, note_id, seen = raw
        if seen == print_ and isinstance(score, float | int) and isinstance(note_id, str):
            return float(score), note_id
    except (ValueError, TypeError, binascii.Error):
        pass
    raise ToolFailure(
        "invalid_cursor",
        "cursor is not a nextCursor that notes_search returned for this workspaceUri and query; "
        "omit it to start from the first page",
    )


class SearchTool:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def __call__(self, call: ToolCall) -> ToolResult:
        uri, query = call.arguments["workspaceUri"], call.arguments["query"]
        limit = call.arguments.get("limit", DEFAULT_LIMIT)
        scope = self.services.grants.authorize_workspace(call.principal, uri)
        terms = search_terms(query)
        if not terms:
            raise ToolFailure("invalid_query", f"query {query!r} has no words to search for")
        print_ = fingerprint(str(scope.uri), " ".join(terms))
        after = decode_cursor(call.arguments["cursor"], print_) if "cursor" in call.arguments else None
        async with progress_sink(call.report_progress) as progress:
            hits = await anyio.to_thread.run_sync(
                lambda: self.services.store.search(
                    scope, terms, after=after, limit=limit + 1, progress=progress
                )
            )
        structured: dict[str, Any] = {
            "workspaceUri": str(scope.uri),
            "query": query,
            "results": [{**note_object(scope, h.note), "snippet": h.snippet} for h in hits[:limit]],
        }
        if len(hits) > limit:
            structured["nextCursor"] = encode_cursor(hits[limit - 1].position, print_)
        return complete(structured)


def notes_search(services: Services) -> ToolDef:
    return ToolDef(
        tool=types.Tool(
            name="notes_search",
            title="Search notes",
            description="Search a workspace (or a folder inside it) by words in titles, paths and bodies. "
            "Best matches first, with a snippet each; pass nextCursor back as cursor for more. Read-only.",
            input_schema=INPUT_SCHEMA,
            output_schema=OUTPUT_SCHEMA,
            annotations=types.ToolAnnotations(
                title="Search notes",
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        ),
        handler=SearchTool(services),
    )
