"""`notes_search`: ranked search over titles, paths and bodies by words and, with a model, by
meaning; with filters and opaque cursors.

Rule 1: a query is words (`model.search_terms`: case-folded, stop words dropped, stemmed by the
store) and, when a model is configured (`notewarden.embeddings`), a question whose meaning is
compared with each note's sections. The first hits fuse three rankings (`notes.ranking`: the store's
words ranking, notes whose title or alias has the words, notes closest in meaning); the notes further
down the words ranking follow (`notes.hybrid_search`). Each hit says what found it (`foundBy`:
words, meaning or both), whether it has every word (`allWords`), and, when meaning found it, the
section (`section`, as `notes_read {section}` takes it). `mode` is `all_words` when every hit shown
has every word, else `any_words`; `ranking` says whether meaning took part and, when not, why.

Rule 2: filters (`tags` all/any, with nested tags; `properties` equals/in/before/after on front
matter; `modifiedAfter`/`modifiedBefore`; `folder`) narrow every ranking; without a query they list
the notes that pass, newest first (mode `filters`).

Rule 3: a page holds at most `limit` hits; `nextCursor` resumes after the last one. The cursor is
that hit's (phase, rank, id) plus a fingerprint of the workspace, words and filters, so a cursor of
another query is refused rather than silently misapplied. The first hits are ranked again for every
page: after a change in between, a note may move across the cursor (shown twice or not at all). Every
hit was re-checked just before it was returned (`notes.index`, Rule 1): a deleted or moved note is
never a hit.
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

from notewarden.embeddings import EmbeddingFailed
from notewarden.notes.hybrid_search import Page, Position, Shown, search_page
from notewarden.notes.model import search_terms
from notewarden.notes.store import NoteFilter, ProgressSink, PropertyTest
from notewarden.scope.fs_errors import PathRejected
from notewarden.scope.grants import WorkspaceScope
from notewarden.scope.note_paths import split_relative
from notewarden.scope.rights import Right
from notewarden.services import Services
from notewarden.tools.paging import limit_argument
from notewarden.tools.registry import ToolCall, ToolFailure, ToolResult, declare
from notewarden.tools.results import complete, note_object, progress_sink
from notewarden.tools.schemas import NOTE_OBJECT, WORKSPACE_URI, args, returns

__all__ = ["NOTES_SEARCH", "SearchTool"]

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


def fingerprint(workspace_uri: str, query: str) -> str:
    return hashlib.sha256(f"{workspace_uri}\0{query}".encode()).hexdigest()[:16]


def encode_cursor(position: Position, print_: str) -> str:
    raw = json.dumps([*position, print_], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, print_: str) -> Position:
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        phase, rank, note_id, seen = raw
        valid_rank = isinstance(rank, float | int) and not isinstance(rank, bool)
        if seen == print_ and phase in (0, 1, 2, 3) and valid_rank and isinstance(note_id, str):
            return phase, rank, note_id
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
        searching = self.services.search
        embedder = searching.embedder if terms else None
        meaning = [query, embedder.name] if embedder is not None else []  # the question's own words count
        print_ = fingerprint(str(scope.uri), shape + json.dumps(when) + json.dumps(meaning))
        after = decode_cursor(call.arguments["cursor"], print_) if "cursor" in call.arguments else None

        reason = searching.reason if terms else "filters only: newest first"

        def find(sink: ProgressSink | None) -> Page:
            nonlocal embedder, reason, print_
            try:
                return search_page(
                    self.services.store,
                    scope,
                    terms,
                    query,
                    embedder=embedder,
                    filters=filters,
                    limit=limit,
                    after=after,
                    progress=sink,
                    meaning_weight=searching.meaning_weight,
                )
            except EmbeddingFailed as failed:  # notewarden.embeddings Rule 3: words still answer
                embedder, reason = None, f"by words only this time: {failed}"
                print_ = fingerprint(str(scope.uri), shape + json.dumps(when))
                return search_page(
                    self.services.store,
                    scope,
                    terms,
                    query,
                    embedder=None,
                    filters=filters,
                    limit=limit,
                    after=after,
                    progress=sink,
                )

        async with progress_sink(call.report_progress) as sink:
            page = await anyio.to_thread.run_sync(find, sink)
        shown = page.hits
        mode = "filters" if not terms else "all_words" if all(s.hit.all_words for s in shown) else "any_words"
        ranking: dict[str, Any] = {
            "by": "words_and_meaning" if embedder is not None else "words",
            "reason": reason,
        }
        if embedder is not None:
            ranking["model"] = embedder.name
        structured: dict[str, Any] = {"workspaceUri": str(scope.uri)}
        if query is not None:
            structured["query"] = query
        structured |= {
            "words": terms,
            "mode": mode,
            "ranking": ranking,
            "results": [_result(scope, s) for s in shown],
        }
        if page.more and shown:
            structured["nextCursor"] = encode_cursor(shown[-1].position, print_)
        return complete(structured)


def _result(scope: WorkspaceScope, shown: Shown) -> dict[str, Any]:
    hit = shown.hit
    found: dict[str, Any] = {
        **note_object(scope, hit.note),
        "snippet": hit.snippet,
        "allWords": hit.all_words,
        "foundBy": hit.found_by,
    }
    if hit.section is not None:
        found["section"] = hit.section
    return found


NOTES_SEARCH = declare(
    "notes_search",
    "Search notes",
    "Search a workspace (or a folder inside it) by words or a question in your own words, in titles, "
    "paths and bodies (and by meaning when the server has a model: ranking says), and/or filter by tags, "
    "front-matter properties, modification time and folder. Best matches first, with a snippet each, what "
    "found it (foundBy) and the matching section; mode says whether every hit has every word. Pass "
    "nextCursor back as cursor for more. Read-only.",
    args(
        {"workspaceUri": WORKSPACE_URI},
        {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": 500,
                "pattern": r"\w",
                "description": "What to find, as words or a question in your own words. Notes with the words (after "
                "dropping words such as 'how' or 'the', and matching word forms: 'sharing' finds 'shared') and, when "
                "the server has a model, notes that mean the same in other words are ranked together; title and "
                "alias matches rank highest. Optional when filters are given.",
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
            "cursor": {
                "type": "string",
                "maxLength": 4000,
                "description": "nextCursor of the previous page.",
            },
            "limit": limit_argument(DEFAULT_LIMIT, MAX_LIMIT),
        },
    ),
    returns(
        {
            "workspaceUri": {"type": "string"},
            "query": {"type": "string"},
            "words": {"type": "array", "items": {"type": "string"}, "description": "The words searched for."},
            "mode": {
                "enum": ["all_words", "any_words", "filters"],
                "description": "all_words: every hit has every word; any_words: some hits have only some of the "
                "words, or were found by meaning; filters: no query, notes passing the filters, newest first.",
            },
            "ranking": {
                "type": "object",
                "properties": {
                    "by": {
                        "enum": ["words", "words_and_meaning"],
                        "description": "Whether meaning took part in this search (a model is configured).",
                    },
                    "model": {"type": "string"},
                    "reason": {"type": "string", "description": "Why search answers this way."},
                },
                "required": ["by", "reason"],
            },
            "results": {
                "type": "array",
                "items": {
                    **NOTE_OBJECT,
                    "properties": {
                        **NOTE_OBJECT["properties"],
                        "snippet": {"type": "string", "description": "Matching words are in **bold**."},
                        "allWords": {"type": "boolean"},
                        "foundBy": {
                            "enum": ["words", "meaning", "both"],
                            "description": "What found the note: its words, its meaning (a section close to the "
                            "query), or both.",
                        },
                        "section": {
                            "type": "string",
                            "description": "The section that matched by meaning (Parent > Heading; pass it to "
                            "notes_read as section); empty: the text before the first heading.",
                        },
                    },
                    "required": [*NOTE_OBJECT["required"], "snippet", "allWords", "foundBy"],
                },
            },
            "nextCursor": {"type": "string", "description": "Present when more results follow."},
        },
        ["workspaceUri", "mode", "words", "results"],
    ),
    Right.READ,
)
