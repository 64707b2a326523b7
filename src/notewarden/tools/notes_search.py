"""`notes_search`: ranked full-text search over titles, paths and bodies, with filters and opaque
cursors.

Rule 1: a query is words (`model.search_terms`: case-folded, stop words dropped, stemmed by the
store). The hits that contain every word come first (mode `all_words`); when they are fewer than
`limit`, the notes that contain some but not all of the words follow, best first (bm25 over the
words they contain: the ranked fallback), and the result's `mode` is `any_words`. Each hit says
whether it has every word (`allWords`). A query of one word has no fallback.

Rule 2: filters (`tags` all/any, with nested tags; `properties` equals/in/before/after on front
matter; `modifiedAfter`/`modifiedBefore`; `folder`) narrow both phases; without a query they list
the notes that pass, newest first (mode `filters`).

Rule 3: a page holds at most `limit` hits; `nextCursor` resumes after the last one. The cursor is
that hit's phase and (rank, id) plus a fingerprint of the workspace, words and filters: keyset
pagination, so a page never repeats a hit of an earlier page while the workspace is unchanged,
and a cursor of another query is refused rather than silently misapplied. Every hit was re-checked
on disk just before it was returned (`notes.index`, Rule 1): a deleted or moved note is never a hit.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import anyio.to_thread

from notewarden.notes.model import search_terms
from notewarden.notes.store import NoteFilter, ProgressSink, PropertyTest, SearchHit, SearchMatch
from notewarden.scope.fs_errors import PathRejected
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.note_paths import split_relative
from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.registry import READ_ONLY, ToolCall, ToolDef, ToolFailure, ToolResult, declare
from notewarden.tools.results import NOTE_OBJECT, WORKSPACE_URI, complete, note_object, progress_sink

__all__ = ["notes_search"]

DEFAULT_LIMIT = 10
MAX_LIMIT = 50

_TAG_LIST: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": 200},
    "minItems": 1,
    "maxItems": 20,
}
_PROPERTY_VALUE: dict[str, Any] = {"type": ["string", "number", "boolean", "null"]}
_TIME: dict[str, Any] = {
    "type": "string",
    "minLength": 10,
    "maxLength": 40,
    "description": "ISO 8601 date or date-time (UTC when no offset is given), e.g. 2026-01-31 or 2026-01-31T09:00:00Z.",
}
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "workspaceUri": WORKSPACE_URI,
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": 500,
            "pattern": r"\w",
            "description": "What to find, as words or a question. Notes with every word (after dropping words such "
            "as 'how' or 'the', and matching word forms: 'sharing' finds 'shared') come first; if there are too "
            "few, notes with some of the words follow. Title matches rank highest. Optional when filters are given.",
        },
        "tags": {
            "type": "object",
            "properties": {"all": _TAG_LIST, "any": _TAG_LIST},
            "additionalProperties": False,
            "description": "Keep notes with all of these tags and/or any of them (front matter or #inline; "
            "'area' also matches 'area/sub'; case-insensitive).",
        },
        "properties": {
            "type": "object",
            "maxProperties": 10,
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "equals": _PROPERTY_VALUE,
                    "in": {"type": "array", "items": _PROPERTY_VALUE, "minItems": 1, "maxItems": 50},
                    "before": {"type": ["string", "number"]},
                    "after": {"type": ["string", "number"]},
                },
                "additionalProperties": False,
                "minProperties": 1,
            },
            "description": 'Front-matter conditions by property name, e.g. {"status": {"equals": "active"}, '
            '"due": {"before": "2026-04-01"}}. A list property matches when one of its items does; dates '
            "compare as ISO text.",
        },
        "modifiedAfter": _TIME,
        "modifiedBefore": _TIME,
        "folder": {
            "type": "string",
            "minLength": 1,
            "maxLength": 4095,
            "description": "Only notes below this folder (relative to the workspace root).",
        },
        "cursor": {"type": "string", "maxLength": 4000, "description": "nextCursor of the previous page."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
    },
    "required": ["workspaceUri"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "workspaceUri": {"type": "string"},
        "query": {"type": "string"},
        "words": {"type": "array", "items": {"type": "string"}, "description": "The words searched for."},
        "mode": {
            "enum": ["all_words", "any_words", "filters"],
            "description": "all_words: every hit has every word; any_words: too few did, so notes with some "
            "of the words follow them; filters: no query, notes passing the filters, newest first.",
        },
        "results": {
            "type": "array",
            "items": {
                **NOTE_OBJECT,
                "properties": {
                    **NOTE_OBJECT["properties"],
                    "snippet": {"type": "string", "description": "Matching words are in **bold**."},
                    "allWords": {"type": "boolean"},
                },
                "required": [*NOTE_OBJECT["required"], "snippet", "allWords"],
            },
        },
        "nextCursor": {"type": "string", "description": "Present when more results follow."},
    },
    "required": ["workspaceUri", "mode", "words", "results"],
}

_PHASES: tuple[SearchMatch, ...] = ("all", "any")


def fingerprint(workspace_uri: str, query: str) -> str:
    return hashlib.sha256(f"{workspace_uri}\0{query}".encode()).hexdigest()[:16]


def encode_cursor(phase: int, position: tuple[float, str], print_: str) -> str:
    raw = json.dumps([phase, position[0], position[1], print_], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, print_: str) -> tuple[int, tuple[float, str]]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        phase, score, note_id, seen = raw
        if seen == print_ and phase in (0, 1) and isinstance(score, float | int) and isinstance(note_id, str):
            return phase, (float(score), note_id)
    except (ValueError, TypeError, binascii.Error):
        pass
    raise ToolFailure(
        "invalid_cursor",
        "cursor is not a nextCursor that notes_search returned for this workspaceUri, query and filters; "
        "omit it to start from the first page",
    )


def instant_ns(text: str, argument: str) -> int:
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise ToolFailure(
            "invalid_arguments", f"{argument} {text!r} is not an ISO 8601 date or date-time (e.g. 2026-01-31)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1_000_000_000)


def note_filter(arguments: Mapping[str, Any], scope: WorkspaceScope) -> NoteFilter | None:
    """The filters of a call (Rule 2), or None when it has none."""
    tags = arguments.get("tags", {})
    tests = tuple(
        PropertyTest(name, op, value)
        for name, condition in arguments.get("properties", {}).items()
        for op, value in condition.items()
    )
    folder = arguments.get("folder", "").strip("/")
    if folder:
        try:
            split_relative(folder)
        except PathRejected as exc:
            raise ToolFailure("invalid_arguments", f"folder {folder!r} is not a folder path: {exc}") from None
        if not scope.contains(folder + "/x"):
            raise ToolFailure(
                "path_refused", f"folder {folder!r} is outside {scope.uri}; name a folder inside it"
            )
    found = NoteFilter(
        tags_all=tuple(tags.get("all", ())),
        tags_any=tuple(tags.get("any", ())),
        properties=tests,
        modified_after_ns=instant_ns(arguments["modifiedAfter"], "modifiedAfter")
        if "modifiedAfter" in arguments
        else None,
        modified_before_ns=instant_ns(arguments["modifiedBefore"], "modifiedBefore")
        if "modifiedBefore" in arguments
        else None,
        folder=folder,
    )
    return None if found == NoteFilter() else found


class SearchTool:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def __call__(self, call: ToolCall) -> ToolResult:
        uri, query = call.arguments["workspaceUri"], call.arguments.get("query")
        limit = call.arguments.get("limit", DEFAULT_LIMIT)
        scope = self.services.grants.authorize_workspace(call.caller, uri)
        filters = note_filter(call.arguments, scope)
        terms = search_terms(query) if query is not None else []
        if query is not None and not terms:
            raise ToolFailure("invalid_query", f"query {query!r} has no words to search for")
        if not terms and filters is None:
            raise ToolFailure(
                "invalid_arguments",
                "give a query, or at least one filter (tags, properties, modifiedAfter, modifiedBefore, folder)",
            )
        shape = json.dumps(
            [terms, call.arguments.get("tags"), call.arguments.get("properties")], sort_keys=True
        )
        when = [call.arguments.get(k) for k in ("modifiedAfter", "modifiedBefore", "folder")]
        print_ = fingerprint(str(scope.uri), shape + json.dumps(when))
        phase, after = (
            decode_cursor(call.arguments["cursor"], print_) if "cursor" in call.arguments else (0, None)
        )

        def find(sink: ProgressSink | None) -> list[tuple[int, SearchHit]]:
            store = self.services.store
            hits: list[tuple[int, SearchHit]] = []
            last_phase = 0 if len(terms) < 2 else 1
            for current in range(phase, last_phase + 1):
                want = limit + 1 - len(hits)
                start = after if current == phase else None
                found = store.search(
                    scope,
                    terms,
                    after=start,
                    limit=want,
                    progress=sink,
                    match=_PHASES[current],
                    filters=filters,
                )
                hits += [(current, h) for h in found]
                if len(hits) > limit:
                    break
            return hits

        async with progress_sink(call.report_progress) as sink:
            hits = await anyio.to_thread.run_sync(find, sink)
        shown = hits[:limit]
        mode = "filters" if not terms else "any_words" if any(p for p, _ in shown) else "all_words"
        structured: dict[str, Any] = {"workspaceUri": str(scope.uri)}
        if query is not None:
            structured["query"] = query
        structured |= {
            "words": terms,
            "mode": mode,
            "results": [
                {**note_object(scope, h.note), "snippet": h.snippet, "allWords": p == 0} for p, h in shown
            ],
        }
        if len(hits) > limit:
            last_phase, last = shown[-1]
            structured["nextCursor"] = encode_cursor(last_phase, last.position, print_)
        return complete(structured)


def notes_search(services: Services) -> ToolDef:
    return ToolDef(
        tool=declare(
            "notes_search",
            "Search notes",
            "Search a workspace (or a folder inside it) by words or a question, in titles, paths and "
            "bodies, and/or filter by tags, front-matter properties, modification time and folder. Best matches "
            "first, with a snippet each; mode says whether every hit has every word. Pass nextCursor back as "
            "cursor for more. Read-only.",
            INPUT_SCHEMA,
            OUTPUT_SCHEMA,
            **READ_ONLY,
        ),
        handler=SearchTool(services),
        right=Right.READ,
    )
